"""The real Pi 1.6.0 (`@earendil-works/pi-coding-agent`, on the Node 22 of the test extra)
through the real `python -m amux run pi -- …`, against the scripted model, on a real Hub:
Pi's MCP route.

Only the model is scripted (tests/mockmodel, Chat Completions); Pi, the launcher, `amux
memory mcp` and the Hub are real. Pi runs at its defaults (no settings file, project trust
at "ask", which a print run cannot ask, so the project's `.pi/` files are not loaded) with a
user's own set-up: `mcp.json` with a server of theirs (its default `codemode` exposure),
a global `APPEND_SYSTEM.md` and `AGENTS.md`, a project `AGENTS.md` and `.pi/APPEND_SYSTEM.md`.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from amux.adapters.pi import MCP_EXTENSION
from amux.client.tools import TOOLS
from amux.protocol.render import render
from tests.e2e.story import (
    PROMPTS,
    USER_MCP,
    amux_run,
    bounded,
    check_store_story,
    mcp_story,
    sessions,
)
from tests.hubproc import HubProcess
from tests.mockmodel import MockModel, Recorded, Text, ToolCall
from tests.mockmodel.agents import pi_env
from tests.peers import npm_bin

GLOBAL_APPEND = "GLOBAL-APPEND-LINE: answer in French."
GLOBAL_AGENTS = "GLOBAL-AGENTS-LINE: the user is Ada."
PROJECT_AGENTS = "PROJECT-AGENTS-LINE: this repository uses tabs."
PROJECT_APPEND = "PROJECT-APPEND-LINE: untrusted, never loaded at defaults."
USER_RULE = "USER-RULE-LINE: answer like a pirate."
MODEL = ("--model", "mock/mock-model")
AMUX_TOOLS = {f"mcp__amux__{tool['name']}" for tool in TOOLS}


def call(tool: str, arguments: dict[str, Any]) -> ToolCall:
    return ToolCall(f"mcp__amux__{tool}", arguments)



def user_setup(root: Path, model: MockModel) -> tuple[dict[str, str], Path]:
    """The user's environment and project (module doc); nothing of amux in either."""
    env = pi_env(root, model)
    agent = Path(env["PI_CODING_AGENT_DIR"])
    (agent / "APPEND_SYSTEM.md").write_text(GLOBAL_APPEND + "\n")
    (agent / "AGENTS.md").write_text(GLOBAL_AGENTS + "\n")
    (agent / "mcp.json").write_text(json.dumps(
        {"mcpServers": {"mine": {"command": sys.executable, "args": [str(USER_MCP)]}}}))
    work = root / "work"
    (work / ".pi").mkdir(parents=True)
    (work / ".pi" / "APPEND_SYSTEM.md").write_text(PROJECT_APPEND + "\n")
    (work / "AGENTS.md").write_text(PROJECT_AGENTS + "\n")
    return env, work


def snapshot(*roots: Path) -> dict[str, bytes]:
    """Every file below `roots` with its bytes (the user's own files)."""
    return {str(path): path.read_bytes() for root in roots for path in sorted(root.rglob("*"))
            if path.is_file()}


def pi(hub: HubProcess, env: dict[str, str], work: Path, *args: str):  # type: ignore[no-untyped-def]
    """`amux run pi -- -p --model mock/mock-model ARGS` (`amux_run`)."""
    return amux_run(hub, env, work, str(npm_bin("pi")), "--", "-p", *MODEL, *args)


def system(request: Recorded) -> str:
    first = request.body["messages"][0]
    assert first["role"] == "system"
    return str(first["content"])


def addendum(request: Recorded) -> str:
    """Pi's `<addendum>` section: what it appends to its system prompt."""
    text = system(request)
    start = text.index("<addendum>\n") + len("<addendum>\n")
    return text[start:text.index("\n</addendum>", start)]


def declared(request: Recorded) -> dict[str, Any]:
    return {str(tool["function"]["name"]): tool["function"] for tool in request.tools}


def tokens(hub: HubProcess) -> int:
    principals = hub.call("/v1/admin/principals", {"action": "list"})[1]
    return sum(t["kind"] != "login" for p in principals["principals"] for t in p["tokens"])


def test_pi1_saves_recalls_corrects_forgets_and_resumes(memory_hub: HubProcess,
                                                       tmp_path: Path) -> None:
    """(1) the protocol follows what Pi appends of the user's own (their global
    APPEND_SYSTEM.md; the untrusted project's is left out, as Pi leaves it), their context
    files stay, and the five tools are declared with their schemas while the user's server
    stays at its codemode exposure; (2)-(5) the four-session story; (6) resuming the first
    session continues the same Pi session (its own file, `--session-id`) with a
    byte-identical system message and tools; the user's files untouched, the session's
    token never in Pi's tree and revoked after each run."""
    before = tokens(memory_hub)
    with MockModel(*mcp_story(call=call)) as model:
        env, work = user_setup(tmp_path, model)
        agent = Path(env["PI_CODING_AGENT_DIR"])
        mine = snapshot(work) | {k: v for k, v in snapshot(agent).items()
                                 if k.endswith((".md", "mcp.json", "models.json"))}
        for prompt in PROMPTS:
            pi(memory_hub, env, work, prompt)
        first = sessions(memory_hub)[0]
        resumed = amux_run(memory_hub, env, work, "--resume", first["id"], "--", "-p",
                           "Still there?")
    main = model.main()
    opening = main[0]
    protocol = render("mcp")
    assert first["channel"] == "mcp" and first["adapter_version"] == "1.6.0"
    # (1) Pi's own prompt, the user's appended text then the protocol in its addendum.
    assert addendum(opening) == f"{GLOBAL_APPEND}\n\n\n{protocol}"  # its file ends in a newline
    text = system(opening)
    assert PROJECT_APPEND not in text  # untrusted project: Pi skips it, and so does amux
    assert GLOBAL_AGENTS in text and PROJECT_AGENTS in text and text.count(protocol) == 1
    sent = declared(opening)
    for tool in TOOLS:
        assert sent[f"mcp__amux__{tool['name']}"]["parameters"]["properties"] == \
            tool["inputSchema"]["properties"]
    assert not [name for name in sent if name.startswith("mcp__mine__")]  # theirs: codemode
    assert "mcp__mine (codemode)" in text
    # (2)-(5)
    upserts = model.tool_results("mcp__amux__memory_upsert")
    results = {"save": upserts[0].text, "correct": upserts[1].text,
               "search": model.tool_results("mcp__amux__memory_search")[-1].text,
               "forget": model.tool_results("mcp__amux__memory_forget")[-1].text}
    check_store_story(memory_hub, model, results)
    # (6) The id chosen up front names Pi's own session file; the resume continues it.
    ref = first["agent_session"]
    assert ref and not os.path.isabs(ref)
    assert len(list((agent / "sessions").glob(f"*/*_{ref}.jsonl"))) == 1
    again = main[-1]
    assert "Resumed." in resumed.stdout and again.conversation == opening.conversation + 4
    assert again.body["messages"][0] == opening.body["messages"][0]
    assert again.tools == opening.tools
    assert PROMPTS[0] in json.dumps(again.body["messages"])
    # The user's files untouched; no token in Pi's tree; each session's token revoked.
    assert {k: v for k, v in snapshot(work, agent).items() if k in mine} == mine
    session_dir = memory_hub.home / "sessions" / first["id"]
    for root in (work, agent, session_dir):
        for path in root.rglob("*"):
            assert not (path.is_file() and b"amux_" in path.read_bytes()
                        and b"AMUX_TOKEN" in path.read_bytes()), path
    assert "AMUX_TOKEN" not in (session_dir / "pi-amux.json").read_text()
    assert (memory_hub.home / "pi-amux.js").read_text() == MCP_EXTENSION  # one for all
    assert tokens(memory_hub) == before


def test_pi1_with_the_users_append_system_prompt_and_a_control_run(memory_hub: HubProcess,
                                                                   tmp_path: Path) -> None:
    """The control, plain Pi 1.6.0 with the same set-up and the user's own
    `--append-system-prompt`: its system prompt and tools. Through amux: the same system
    prompt but for the protocol after the user's text (their flag replaces Pi's
    APPEND_SYSTEM.md, as in the control), the same tools plus amux's five; Pi has no memory
    of its own to turn off, and nothing of the control is missing."""
    with MockModel([Text("Plain.")]) as control:
        env, work = user_setup(tmp_path / "control", control)
        plain = bounded([str(npm_bin("pi")), "-p", *MODEL, "--append-system-prompt",
                         USER_RULE, "Hi."], env, work)
    assert plain.returncode == 0, plain.stderr[-2000:]
    with MockModel([Text("Through amux.")]) as model:
        env, work = user_setup(tmp_path / "amux", model)
        pi(memory_hub, env, work, "--append-system-prompt", USER_RULE, "Hi.")
    [alone] = control.main()
    [launched] = model.main()
    assert addendum(alone) == USER_RULE
    assert addendum(launched) == f"{USER_RULE}\n\n{render('mcp')}"
    assert system(launched).replace(str(tmp_path / "amux"), str(tmp_path / "control")) == \
        system(alone).replace(USER_RULE, f"{USER_RULE}\n\n{render('mcp')}")
    assert set(declared(launched)) == set(declared(alone)) | AMUX_TOOLS


def test_pi1_without_memory_and_with_the_hub_down(hub: HubProcess, tmp_path: Path) -> None:
    """Memory off on the Hub, then the Hub unreachable: Pi as it is (the user's own appended
    text and servers), no amux tools or protocol, a warning naming why, and the session
    still resumable (its id chosen up front)."""
    with MockModel([Text("Off.")], [Text("Down.")]) as model:
        env, work = user_setup(tmp_path, model)
        off = pi(hub, env, work, "Hi.")
        down = amux_run(hub, {**env, "AMUX_HUB": f"unix:{tmp_path}/no-hub.sock",
                              "AMUX_TOKEN": "amux_" + "d" * 43}, work, str(npm_bin("pi")),
                        "--", "-p", *MODEL, "Hi again.")
    assert "memory.enabled = false" in off.stderr and "hub_unreachable" in down.stderr
    assert off.stdout.strip() == "Off." and down.stdout.strip() == "Down."
    for request in model.main():
        assert not AMUX_TOOLS & set(declared(request))
        assert "amux memory protocol" not in system(request)
        assert addendum(request) == GLOBAL_APPEND + "\n"  # the file as it is
    assert all(state["agent_session"] for state in sessions(hub))


def test_pi1_dry_run_shows_the_plan_the_launch_acts_on(memory_hub: HubProcess,
                                                      tmp_path: Path) -> None:
    """A dry run starts nothing, not even `pi --version`: the version Pi's package declares
    chooses the route, so it shows the MCP plan a launch then acts on."""
    with MockModel([Text("Hi.")]) as model:
        env, work = user_setup(tmp_path, model)
        dry = json.loads(amux_run(memory_hub, env, work, "--dry-run", str(npm_bin("pi")), "--",
                                  "-p", *MODEL, "Hi.").stdout)
        pi(memory_hub, env, work, "Hi.")
    [state] = sessions(memory_hub)
    extension = next(w for w in dry["writes"] if w["path"].endswith("/pi-amux.js"))
    assert dry["channel"] == state["channel"] == "mcp"
    assert dry["argv"][1] == "--session-id" and dry["argv"][3:5] == ["--extension",
                                                                     extension["path"]]
    assert extension["text"] == (memory_hub.home / "pi-amux.js").read_text() == MCP_EXTENSION
    data = next(w for w in dry["writes"] if w["path"].endswith("/pi-amux.json"))
    ours = memory_hub.home / "sessions" / state["id"] / "pi-amux.json"
    assert data["text"] == ours.read_text().replace(state["id"], dry["session"])


def test_pi1_trusting_the_project_is_pis_and_the_protocol_follows(memory_hub: HubProcess,
                                                                  tmp_path: Path) -> None:
    """The user's `--approve` (trust the project for this run): Pi then reads the
    project's `.pi/APPEND_SYSTEM.md` in place of the global one and the project's
    `.pi/mcp.json`; amux's text still follows Pi's own, and its tools stay direct."""
    with MockModel([Text("Trusted.")]) as model:
        env, work = user_setup(tmp_path, model)
        (work / ".pi" / "mcp.json").write_text(json.dumps(
            {"mcpServers": {"project": {"command": sys.executable, "args": [str(USER_MCP)]}}}))
        pi(memory_hub, env, work, "--approve", "Hi.")
    [request] = model.main()
    assert addendum(request) == f"{PROJECT_APPEND}\n\n\n{render('mcp')}"
    assert GLOBAL_APPEND not in system(request)
    text = system(request)
    assert "mcp__project (codemode)" in text and "mcp__mine (codemode)" in text
    assert set(declared(request)) >= AMUX_TOOLS
