"""The real Cline 3.0.65 through the real `python -m amux run cline -- …`, against the
scripted model, on a real Hub.

Only the model is scripted (tests/mockmodel, Chat Completions); Cline, the launcher, `amux
memory mcp` and the Hub are real. Cline runs at its defaults (tools auto-approved, the
`auto` session backend) with a user's own set-up: the `openai-compatible` provider `cline
auth` writes, a global rule in `~/.cline/rules/` (and a "memory bank" rule, Cline's
memory convention), a project `.clinerules/` rule and `AGENTS.md`, and an MCP server of
theirs in `~/.cline/data/settings/cline_mcp_settings.json`. Plain Cline's own runs (the
control, memory off) set `CLINE_SESSION_BACKEND_MODE=local` as the user's choice: without
it Cline would start the machine's one background daemon; every test checks that nothing
it started outlives it (`no_leftover_processes`).
"""

from __future__ import annotations

import contextlib
import json
import os
import pty
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from amux.client.tools import TOOLS
from amux.protocol.render import render
from tests.e2e.story import (
    PROMPTS,
    USER_MCP,
    amux_run,
    bounded,
    chat_tools,
    check_store_story,
    mcp_story,
    sessions,
)
from tests.hubproc import HubProcess
from tests.isolation.world import World, user_a
from tests.mockmodel import MockModel, Recorded, Text, ToolCall
from tests.mockmodel.agents import base_env, cline_env, processes_below
from tests.peers import npm_bin

USER_GLOBAL = "USER-GLOBAL-RULE: answer like a pirate."
PROJECT_RULE = "PROJECT-RULE-LINE: this repository uses tabs."
AGENTS_RULE = "AGENTS-RULE-LINE: run make check before committing."
MEMORY_BANK = ("MEMORY-BANK-RULE: at the start of every task read memory-bank/*.md, and "
               "update them when asked to.")
"""The user's "memory bank" (Cline's memory convention: a rule of their own)."""
AMUX_TOOLS = {f"amux__{tool['name']}" for tool in TOOLS}
LOCAL = {"CLINE_SESSION_BACKEND_MODE": "local"}
"""The user's own choice for plain Cline's runs here: no background daemon."""


def call(tool: str, arguments: dict[str, Any]) -> ToolCall:
    """A call of an amux memory tool as Cline names it (`amux__<tool>`)."""
    return ToolCall(f"amux__{tool}", arguments)


@pytest.fixture(autouse=True)
def no_leftover_processes(tmp_path: Path) -> Iterator[None]:
    """Nothing a test's Cline started (a run, an MCP server, a background hub daemon)
    is left when it ends: whatever is, is killed and fails the test."""
    yield
    left = {pid: _cmdline(pid) for pid in processes_below(tmp_path)}
    for pid in left:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    assert not left, f"processes left behind: {left}"


def _cmdline(pid: int) -> str:
    with contextlib.suppress(OSError):
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    return "?"


def user_setup(root: Path, model: MockModel, **extra: str) -> tuple[dict[str, str], Path]:
    """The user's environment and project (module doc); nothing of amux in either."""
    env = cline_env(root, model, **extra)
    cline = Path(env["HOME"]) / ".cline"
    (cline / "rules").mkdir(parents=True)
    (cline / "rules" / "pirate.md").write_text(USER_GLOBAL + "\n")
    (cline / "rules" / "memory-bank.md").write_text(MEMORY_BANK + "\n")
    (cline / "data" / "settings" / "cline_mcp_settings.json").write_text(json.dumps(
        {"mcpServers": {"mine": {"command": sys.executable, "args": [str(USER_MCP)]}}}))
    work = root / "work"
    (work / ".clinerules").mkdir(parents=True)
    (work / ".clinerules" / "tabs.md").write_text(PROJECT_RULE + "\n")
    (work / "AGENTS.md").write_text(AGENTS_RULE + "\n")
    return env, work


def users_files(env: dict[str, str], work: Path) -> dict[str, bytes]:
    """The user's rules and MCP settings, as they are."""
    cline = Path(env["HOME"]) / ".cline"
    return {str(path): path.read_bytes() for path in (
        cline / "rules" / "pirate.md", cline / "rules" / "memory-bank.md",
        cline / "data" / "settings" / "cline_mcp_settings.json",
        work / ".clinerules" / "tabs.md", work / "AGENTS.md")}


def cline(hub: HubProcess, env: dict[str, str], work: Path, *args: str,
          ) -> subprocess.CompletedProcess[str]:
    """`amux run cline -- ARGS` (`amux_run`)."""
    return amux_run(hub, env, work, str(npm_bin("cline")), "--", *args)


def system(request: Recorded) -> str:
    first = request.body["messages"][0]
    assert first["role"] == "system"
    return str(first["content"])


def rules(request: Recorded) -> str:
    """The `# Rules` section Cline ends its system message with."""
    text = system(request)
    return text[text.index("\n# Rules\n"):]



def result(model: MockModel, tool: str, index: int = -1) -> str:
    found = model.tool_results(f"amux__{tool}")
    assert found and not found[index].is_error, found
    return found[index].text


def _drain(fd: int, seen: list[bytes]) -> None:
    with contextlib.suppress(OSError):
        while chunk := os.read(fd, 65536):
            seen.append(chunk)


def resume_in_terminal(hub: HubProcess, env: dict[str, str], work: Path, session: str,
                       model: MockModel, prompt: str) -> None:
    """`amux run --resume SESSION` on a terminal (Cline resumes only in its UI): once the UI
    shows, `prompt` is typed; after the model's answer the launcher is asked to stop."""
    controller, terminal = pty.openpty()
    launcher = subprocess.Popen(
        [sys.executable, "-m", "amux", "run", "--resume", session], stdin=terminal,
        stdout=terminal, stderr=terminal, cwd=work, start_new_session=True,
        env={**env, "AMUX_HOME": str(hub.home), "TERM": "xterm-256color",
             "COLUMNS": "120", "LINES": "40"})
    os.close(terminal)
    seen: list[bytes] = []
    threading.Thread(target=_drain, args=(controller, seen), daemon=True).start()
    before = len(model.main())
    try:
        deadline = time.monotonic() + 60
        while b"Resumed." not in b"".join(seen) and len(model.main()) == before:
            assert time.monotonic() < deadline, b"".join(seen)[-3000:]
            time.sleep(2)  # the UI draws, then takes keys
            os.write(controller, prompt.encode())
            time.sleep(0.5)
            os.write(controller, b"\r")
            model.wait_for(lambda request: not request.side and request.index >= before, 5)
        launcher.send_signal(signal.SIGTERM)
        launcher.wait(timeout=30)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(launcher.pid, signal.SIGKILL)
        launcher.wait(10)
        os.close(controller)


def test_cline_saves_recalls_and_resumes_through_amux(memory_hub: HubProcess,
                                                      tmp_path: Path) -> None:
    """(1) the protocol is one more rule in Cline's `# Rules`, beside the user's global and
    project rules, AGENTS.md and memory bank, and the five tools come with their schemas
    beside the user's own server's; (2)-(5) the story: save, find, correct, forget, each in
    a session of its own, headless at Cline's defaults; (6) resuming the first amux session
    continues the same Cline session with a byte-identical system message and tools. The
    user's files are untouched and no background daemon ran."""
    with MockModel(*mcp_story(call=call)) as model:
        env, work = user_setup(tmp_path, model)
        before = users_files(env, work)
        for prompt in PROMPTS:
            done = cline(memory_hub, env, work, prompt)
        assert "Forgotten." in done.stdout
        first_state = sessions(memory_hub)[0]
        assert first_state["agent_session"], "the Cline session id was learnt after the run"
        resume_in_terminal(memory_hub, env, work, first_state["id"], model, "Still there?")
    main = model.main()
    opening = main[0]
    protocol = render("mcp")
    # (1) Every rule of the user's, and the protocol, once.
    section = rules(opening)
    for rule in (USER_GLOBAL, PROJECT_RULE, AGENTS_RULE, MEMORY_BANK):
        assert rule in section
    assert f"## amux-memory-protocol\n{protocol.strip()}" in section
    assert system(opening).count(protocol.strip()) == 1
    sent = chat_tools(opening)
    for tool in TOOLS:
        assert sent[f"amux__{tool['name']}"]["parameters"]["properties"] == \
            tool["inputSchema"]["properties"]
    assert {"mine__user_lookup", "mine__user_ping"} <= set(sent)
    # (2)-(5)
    results = {"save": result(model, "memory_upsert", 0),
               "correct": result(model, "memory_upsert", 1),
               "search": result(model, "memory_search"),
               "forget": result(model, "memory_forget")}
    check_store_story(memory_hub, model, {key: _inner(text) for key, text in results.items()})
    # (6) the same Cline session: its history, then the new prompt, the same system message
    again = main[-1]
    assert "Still there?" in json.dumps(again.body["messages"][-1])
    assert PROMPTS[0] in json.dumps(again.body["messages"])
    assert system(again) == system(opening) and again.tools == opening.tools
    assert users_files(env, work) == before


def _inner(text: str) -> str:
    """The text of the MCP result Cline hands the model as JSON (`content[0].text`)."""
    try:
        value = json.loads(text)
    except ValueError:
        return text
    if isinstance(value, dict) and isinstance(value.get("content"), list):
        return "\n".join(str(part.get("text", "")) for part in value["content"])
    return text


def test_cline_has_no_memory_of_its_own_to_turn_off(memory_hub: HubProcess,
                                                    tmp_path: Path) -> None:
    """The control: plain Cline on the same set-up sends the same system message but for
    the protocol's rule and the same tools but for amux's; no memory tool, no memory
    section, nothing it keeps between sessions but the session itself. The user's memory
    bank rule reaches both runs unchanged: amux leaves it as it is."""
    with MockModel([Text("Plain.")]) as control:
        env, work = user_setup(tmp_path / "control", control)
        plain = bounded([str(npm_bin("cline")), "Hello there, Cline."], {**env, **LOCAL},
                        work)
    assert plain.returncode == 0, plain.stderr[-2000:]
    with MockModel([Text("Through amux.")]) as model:
        env, work = user_setup(tmp_path / "amux", model)
        launched = cline(memory_hub, env, work, "Hello there, Cline.")
    assert "Through amux." in launched.stdout
    [alone], [ours] = control.main(), model.main()
    protocol_rule = f"## amux-memory-protocol\n{render('mcp').strip()}\n\n"
    assert system(ours).replace(protocol_rule, "") == system(alone).replace(
        str(tmp_path / "control"), str(tmp_path / "amux"))
    assert set(chat_tools(ours)) - set(chat_tools(alone)) == AMUX_TOOLS
    assert not [name for name in chat_tools(alone) if "memory" in name]
    assert MEMORY_BANK in rules(alone) and MEMORY_BANK in rules(ours)


def test_cline_without_memory_and_with_the_hub_down(hub: HubProcess, tmp_path: Path) -> None:
    """Memory off on the Hub, then the Hub unreachable: Cline as it is (the user's rules and
    MCP server), no amux tools or rule, a warning naming why, the session still learnt."""
    with MockModel([Text("Off.")], [Text("Down.")]) as model:
        env, work = user_setup(tmp_path, model, **LOCAL)
        off = cline(hub, env, work, "Hello there, Cline.")
        down = amux_run(hub, {**env, "AMUX_HUB": f"unix:{tmp_path}/no-hub.sock",
                              "AMUX_TOKEN": "amux_" + "d" * 43}, work, str(npm_bin("cline")),
                        "--", "Hello again, Cline.")
    assert "memory.enabled = false" in off.stderr and "hub_unreachable" in down.stderr
    assert "Off." in off.stdout and "Down." in down.stdout
    for request in model.main():
        sent = chat_tools(request)
        assert not AMUX_TOOLS & set(sent) and "mine__user_ping" in sent
        assert "amux memory protocol" not in system(request)
        assert USER_GLOBAL in rules(request) and MEMORY_BANK in rules(request)
    assert all(state["agent_session"] for state in sessions(hub))


def test_cline_reaches_an_endpoint_with_a_key_it_never_holds(memory_hub: HubProcess,
                                                             tmp_path: Path) -> None:
    """`--endpoint` on a home where Cline has no provider: Cline uses the endpoint's model
    with the key from the named variable, which no argv, plan, state or file holds; the
    memory tools come too."""
    secret = "sk-endpoint-" + "7" * 20
    with MockModel([call("memory_search", {"query": "tabs"}), Text("From the endpoint.")],
                   ) as model:
        env = {**base_env(tmp_path), "CLINE_NO_AUTO_UPDATE": "1", "MY_ENDPOINT_KEY": secret}
        done = amux_run(memory_hub, env, tmp_path / "work", "--endpoint", model.base_url,
                        "--model", "served-model", "--endpoint-key-env", "MY_ENDPOINT_KEY",
                        str(npm_bin("cline")), "--", "Search my memory please.")
    assert "From the endpoint." in done.stdout
    first, second = model.main()
    for request in (first, second):
        assert request.headers["authorization"] == f"Bearer {secret}"
        assert request.body["model"] == "served-model"
    assert set(chat_tools(first)) >= AMUX_TOOLS
    result(model, "memory_search")
    [state] = sessions(memory_hub)
    assert state["agent_session"] and secret not in json.dumps(state)
    for path in memory_hub.home.rglob("*"):
        if path.is_file():
            assert secret.encode() not in path.read_bytes(), path


PROC_SCAN = '''import json, os, re, sys
out = sys.argv[1]
seen = []
for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            argv = handle.read()
        with open(f"/proc/{pid}/environ", "rb") as handle:
            environ = handle.read()
    except OSError:
        continue
    seen.append({"pid": pid, "argv": argv.decode(errors="replace"),
                 "environ": environ.decode(errors="replace")})
configs = {}
mine = "HOME=" + os.environ["HOME"]  # this run's processes (not another test's, in parallel)
for entry in seen:
    pairs = entry["environ"].split("\\0")
    if mine not in pairs:
        continue
    for pair in pairs:
        if pair.startswith("AMUX_MEMORY_CONFIG="):
            with open(pair.partition("=")[2]) as handle:
                configs[pair.partition("=")[2]] = handle.read()
with open(out, "w") as handle:
    json.dump({"processes": seen, "configs": configs}, handle)
os.execv(sys.executable, [sys.executable, *sys.argv[2:]])
'''
"""Run as the user's own MCP server: while Cline runs, it records every process's argv and
environment and the memory config files that this run's processes (its HOME) name, then
becomes `user_mcp.py`."""


def test_the_session_token_stays_out_of_clines_tree_and_is_revoked(memory_hub: HubProcess,
                                                                   tmp_path: Path) -> None:
    """While Cline runs, the session's token is in no process's argv or environment (the
    memory server reads it from its 0600 config file); after the run it is revoked, and
    nothing Cline keeps holds it."""
    def tokens() -> list[str]:
        principals = memory_hub.call("/v1/admin/principals", {"action": "list"})[1]
        return [json.dumps(t) for p in principals["principals"] for t in p["tokens"]
                if t["kind"] != "login"]

    before = tokens()
    with MockModel([call("memory_search", {"query": "tabs"}), Text("Scanned.")]) as model:
        env, work = user_setup(tmp_path, model)
        scan, seen = tmp_path / "scan.py", tmp_path / "seen.json"
        scan.write_text(PROC_SCAN)
        settings = Path(env["HOME"]) / ".cline" / "data" / "settings"
        (settings / "cline_mcp_settings.json").write_text(json.dumps({"mcpServers": {"mine": {
            "command": sys.executable, "args": [str(scan), str(seen), str(USER_MCP)]}}}))
        done = cline(memory_hub, env, work, "Search my memory please.")
    assert "Scanned." in done.stdout
    result(model, "memory_search")
    scanned = json.loads(seen.read_text())
    assert scanned["configs"], "the memory server's environment names its config"
    [token] = {json.loads(text)["token"] for text in scanned["configs"].values()}
    assert token not in json.dumps(scanned["processes"])  # no argv, no environment
    assert not [t for t in tokens() if t not in before]  # revoked after the run
    for config in scanned["configs"]:
        assert not Path(config).exists()  # removed with the run
    for path in [*Path(env["HOME"]).rglob("*"), *work.rglob("*")]:
        if path.is_file() and not path.is_symlink():
            assert token.encode() not in path.read_bytes(), path


def test_cline_runs_isolated_as_another_user(world: World) -> None:
    """`amux run --as-user`: Cline as the target, in the target's own `~/.cline` (the
    launcher's CLINE_DIR is never passed on), pointed at the model by `--endpoint`, in its
    own process (no daemon another user's launch would share); its memory call lands in
    the Hub under the target's principal, the protocol's rule reaches it, and the session
    amux learnt is the one Cline kept in the target's home."""
    cline_bin = npm_bin("cline")
    assert os.stat(cline_bin.resolve()).st_mode & 0o005 == 0o005
    a = user_a(world)
    entry = world.users[a]
    upsert = call("memory_upsert", {"path": "notes/cline.md", "content": "from cline\n",
                                    "expected_revision": "absent"})
    with MockModel([upsert, Text("Saved.")]) as model:
        done = world.launch(a, str(cline_bin), "Remember this, please.", env={
            "CLINE_DIR": "/nonexistent/launchers-own", "CLINE_NO_AUTO_UPDATE": "1"},
            options=("--endpoint", model.base_url, "--model", "mock-model"), timeout=120)
        assert isinstance(done, subprocess.CompletedProcess)
        assert done.returncode == 0, done.stdout + done.stderr
    result(model, "memory_upsert")
    assert (world.scope_dir(a) / "notes" / "cline.md").read_text() == "from cline\n"
    [state] = sessions(world.hub)
    assert state["as_user"] == a and state["agent_session"]
    kept = Path(entry.pw_dir) / ".cline" / "data" / "sessions" / state["agent_session"]
    assert kept.is_dir() and kept.stat().st_uid == entry.pw_uid
    assert "amux memory protocol" in rules(model.main()[0])
    left = [pid for pid in map(int, filter(str.isdigit, os.listdir("/proc")))
            if _home_of(pid) == entry.pw_dir]
    assert not left, f"the target's Cline left processes: {left}"


def _home_of(pid: int) -> str | None:
    try:
        environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return None
    return next((e[5:].decode() for e in environ if e.startswith(b"HOME=")), None)
