"""The real GitHub Copilot CLI 1.0.102 through the real `python -m amux run copilot -- -p …`,
against the scripted model (BYOK: Copilot's custom provider, no GitHub login), on a real Hub.

Only the model is scripted (tests/mockmodel); Copilot, the launcher, `amux memory mcp` and
the Hub are real. The user has a set-up of their own, at Copilot's defaults: a project
`AGENTS.md` and `.github/copilot-instructions.md`, an MCP server of theirs in
`~/.copilot/mcp-config.json`, and an instructions directory of theirs in
`COPILOT_CUSTOM_INSTRUCTIONS_DIRS` (which amux must append to, not replace). Copilot unpacks
its 235 MB package on first start: every test shares one package cache
(`COPILOT_PKG_CACHE_HOME`), as a user's is warm after their first run. Copilot makes no side
request in `-p` mode.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from amux.adapters.copilot import INSTRUCTIONS_FILE
from amux.client.tools import TOOLS
from amux.protocol.render import render
from tests.e2e.story import USER_MCP, amux_run, chat_tools, sessions
from tests.hubproc import HubProcess
from tests.isolation.world import World, user_a
from tests.mockmodel import MockModel, Recorded, Text, ToolCall
from tests.mockmodel.agents import copilot_env, run_agent
from tests.peers import npm_bin

PATH = "preferences/editor.md"
FACT = "Indent with tabs.\n"
USER_RULE = "USER-RULE-LINE: answer like a pirate."
PROJECT_RULE = "PROJECT-RULE-LINE: this repository uses tabs."
REPO_RULE = "REPO-RULE-LINE: from .github/copilot-instructions.md."
UPSERT = ToolCall("amux-memory_upsert", {"path": PATH, "content": FACT,
                                         "expected_revision": "absent"})
SEARCH = ToolCall("amux-memory_search", {"query": "tabs"})
AMUX_TOOLS = {f"amux-{tool['name']}" for tool in TOOLS}
NATIVE = {"store_memory", "vote_memory"}


def user_setup(root: Path, model: MockModel, cache: Path) -> tuple[dict[str, str], Path]:
    """The user's environment and project (module doc); nothing of amux in either."""
    env = copilot_env(root, model, cache)
    config = Path(env["HOME"]) / ".copilot"
    config.mkdir(parents=True)
    (config / "mcp-config.json").write_text(json.dumps(
        {"mcpServers": {"mine": {"command": sys.executable, "args": [str(USER_MCP)]}}}))
    rules = root / "my-instructions"
    rules.mkdir()
    (rules / "mine.instructions.md").write_text(USER_RULE + "\n")
    work = root / "work"
    (work / ".github").mkdir(parents=True)
    (work / "AGENTS.md").write_text(PROJECT_RULE + "\n")
    (work / ".github" / "copilot-instructions.md").write_text(REPO_RULE + "\n")
    return {**env, "COPILOT_CUSTOM_INSTRUCTIONS_DIRS": str(rules)}, work


def system_text(request: Recorded) -> str:
    """Copilot's one system message (Chat Completions `messages[0]`)."""
    first = request.body["messages"][0]
    assert first["role"] == "system"
    return str(first["content"])


def test_copilot_saves_recalls_and_resumes_through_amux(memory_hub: HubProcess,
                                                        tmp_path: Path,
                                                        package_cache: Path) -> None:
    """(1) the protocol comes last in the system prompt, after the user's AGENTS.md, repo
    instructions and their own instructions directory, and the five tools come with their
    schemas beside the user's server; Copilot's own memory tools are excluded, the user's
    own `--excluded-tools` still applies, and nothing else differs from Copilot run
    without amux (the control); (2) a fact saved in one session lands in the Hub and a new
    session finds it; (3) resuming the first amux session continues the same Copilot
    session with a byte-identical system prompt and tools."""
    copilot = str(npm_bin("copilot"))
    with MockModel([UPSERT, Text("Saved.")], [SEARCH, Text("You indent with tabs.")],
                   [Text("Resumed.")], [Text("Control.")]) as model:
        env, work = user_setup(tmp_path, model, package_cache)
        saved_run = amux_run(memory_hub, env, work, copilot, "--", "-p",
                             "Remember: I indent with tabs.", "--excluded-tools=glob")
        amux_run(memory_hub, env, work, copilot, "--", "-p", "How do I indent?")
        first, second = sessions(memory_hub.home)
        resumed = amux_run(memory_hub, env, work, "--resume", first["id"], "--", "-p",
                           "Still there?", "--excluded-tools=glob")
        control = run_agent([copilot, "-p", "Hi."], env, work, timeout=60)
    assert control.returncode == 0 and control.stdout.strip() == "Control.", control.stderr
    # (stdout: the answer after Copilot's lines for the tools it ran or found disabled)
    assert saved_run.stdout.strip().endswith("\n\nSaved.")
    assert "Disabled tools: glob" in saved_run.stdout and resumed.stdout.strip().endswith(
        "\n\nResumed.")
    opening, *_, again, plain = model.main()
    system = system_text(opening)
    protocol = render("mcp")
    # (1) Copilot's own prompt first, then the user's files, then the protocol, last.
    assert system.startswith("You are the GitHub Copilot CLI")
    assert system.index(REPO_RULE) < system.index(USER_RULE) < system.index(protocol)
    assert system.index(PROJECT_RULE) < system.index(USER_RULE)
    assert system.count(protocol) == 1  # (Copilot's closing sections follow, as always)
    protocol_file = memory_hub.home / "sessions" / first["id"] / INSTRUCTIONS_FILE
    assert protocol_file.read_text() == protocol
    sent = chat_tools(opening)
    for tool in TOOLS:  # (Copilot moves a number's bounds into its description)
        given = sent[f"amux-{tool['name']}"]["parameters"]["properties"]
        assert {name: value.get("type") for name, value in given.items()} == {
            name: value.get("type") for name, value in tool["inputSchema"]["properties"].items()}
    assert {"mine-user_lookup", "mine-user_ping", "bash", "session_store_sql"} <= set(sent)
    assert not NATIVE & set(sent) and not NATIVE & set(chat_tools(plain))  # (none offline)
    # Against the control: the amux tools added, the user's `glob` excluded, nothing else.
    assert set(sent) == (set(chat_tools(plain)) | AMUX_TOOLS) - {"glob"}
    assert AMUX_TOOLS.isdisjoint(chat_tools(plain)) and "amux memory protocol" not in \
        system_text(plain)
    # The launch said what it cannot promise about Copilot's own memory, once.
    assert "store_memory" in saved_run.stderr and "store_memory" not in resumed.stderr
    # (2) Saved without a prompt (-p denies what is not allowed), found by the next session.
    [saved] = model.tool_results("amux-memory_upsert")
    assert not saved.is_error and json.loads(saved.text)["created"] is True, saved.text
    status, stored = memory_hub.call("/v1/memory/get", {"path": PATH})
    assert status == 200 and stored["content"] == FACT
    [found] = model.tool_results("amux-memory_search")
    assert not found.is_error and PATH in found.text
    # (3) The chosen session ids, kept by Copilot; the resume continued the first.
    assert first["agent_session"] != second["agent_session"]
    state = tmp_path / "home" / ".copilot" / "session-state"
    assert (state / first["agent_session"] / "events.jsonl").is_file()
    assert again.body["messages"][0] == opening.body["messages"][0]  # byte for byte
    assert again.body["tools"] == opening.body["tools"]
    assert "Remember: I indent with tabs." in json.dumps(again.body["messages"])
    assert "Still there?" in json.dumps(again.body["messages"][-1])
    # The user's own config was not touched.
    assert sorted(p.name for p in (tmp_path / "my-instructions").iterdir()) == [
        "mine.instructions.md"]
    assert json.loads((tmp_path / "home" / ".copilot" / "mcp-config.json").read_text()) == {
        "mcpServers": {"mine": {"command": sys.executable, "args": [str(USER_MCP)]}}}


def tool_lists(home: Path) -> dict[str, str]:
    """The MCP tool lists Copilot keeps in the user's cache: file name → server name."""
    cache = home / ".cache" / "copilot" / "mcp-tools"
    return {path.name: json.loads(path.read_text())["serverName"]
            for path in sorted(cache.iterdir())} if cache.is_dir() else {}


def test_copilot_keeps_no_tool_list_per_session(memory_hub: HubProcess, tmp_path: Path,
                                                package_cache: Path) -> None:
    """Copilot keeps each MCP server's tool list in `~/.cache/copilot/mcp-tools/`, a file per
    entry and working directory, and amux's entry names a connection config of its session:
    two sessions and a resume leave the files one launch leaves, only the user's own
    server's, as plain Copilot does; the memory tools still ran in each."""
    copilot = str(npm_bin("copilot"))
    home = tmp_path / "home"
    with MockModel([UPSERT, Text("Saved.")], [SEARCH, Text("Found.")],
                   [SEARCH, Text("Found again.")]) as model:
        env, work = user_setup(tmp_path, model, package_cache)
        amux_run(memory_hub, env, work, copilot, "--", "-p", "Remember: tabs.")
        after_one = tool_lists(home)
        amux_run(memory_hub, env, work, copilot, "--", "-p", "How do I indent?")
        first, _ = sessions(memory_hub.home)
        amux_run(memory_hub, env, work, "--resume", first["id"], "--", "-p", "Again?")
    assert tool_lists(home) == after_one
    assert set(after_one.values()) == {"mine"}  # (the user's, kept as without amux)
    [saved] = model.tool_results("amux-memory_upsert")
    assert not saved.is_error and json.loads(saved.text)["created"] is True, saved.text
    found = model.tool_results("amux-memory_search")
    assert len(found) == 2 and all(not each.is_error and PATH in each.text for each in found)


def test_copilot_without_memory_and_with_the_hub_down(hub: HubProcess, tmp_path: Path,
                                                      package_cache: Path) -> None:
    """(4) memory off on the Hub: no tools, no protocol, Copilot as it is (the same tools as
    without amux); (5) the Hub unreachable: the same, with a warning naming why."""
    copilot = str(npm_bin("copilot"))
    with MockModel([Text("Off.")], [Text("Down.")], [Text("Control.")]) as model:
        env, work = user_setup(tmp_path, model, package_cache)
        off = amux_run(hub, env, work, copilot, "--", "-p", "Hi.")  # memory.enabled false
        down = amux_run(hub, {**env, "AMUX_HUB": f"unix:{tmp_path}/no-hub.sock",
                              "AMUX_TOKEN": "amux_" + "d" * 43}, work, copilot, "--",
                        "-p", "Hi again.")
        control = run_agent([copilot, "-p", "Hi."], env, work, timeout=60)
    assert "memory.enabled = false" in off.stderr
    assert "hub_unreachable" in down.stderr
    assert off.stdout.strip() == "Off." and down.stdout.strip() == "Down."
    assert control.stdout.strip() == "Control."
    *launched, plain = model.main()
    for request in launched:
        assert set(chat_tools(request)) == set(chat_tools(plain))
        assert "amux memory protocol" not in system_text(request)
        assert USER_RULE in system_text(request)  # the user's own set-up still applies
    # Without memory the chosen sessions are still kept, so they can be resumed.
    for state in sessions(hub.home):
        assert (tmp_path / "home" / ".copilot" / "session-state" / state["agent_session"]
                / "events.jsonl").is_file()


def test_copilot_reaches_an_endpoint_with_a_key(memory_hub: HubProcess, tmp_path: Path,
                                                package_cache: Path) -> None:
    """`--endpoint` on a home with no provider of the user's and a classic GitHub token
    (which Copilot refuses even in BYOK mode): the key reaches the server but no argv, plan
    or state holds it, and the token is kept away."""
    secret = "sk-endpoint-" + "7" * 20
    with MockModel([Text("From the endpoint.")]) as model:
        env = copilot_env(tmp_path, model, package_cache)
        for name in ("COPILOT_PROVIDER_BASE_URL", "COPILOT_PROVIDER_API_KEY", "COPILOT_MODEL"):
            del env[name]
        env.update({"MY_ENDPOINT_KEY": secret, "GITHUB_TOKEN": "ghp_" + "x" * 36})
        done = amux_run(memory_hub, env, tmp_path / "work", "--endpoint", model.base_url,
                        "--model", "served-model", "--endpoint-key-env", "MY_ENDPOINT_KEY",
                        str(npm_bin("copilot")), "--", "-p", "Hi.")
    assert done.stdout.strip() == "From the endpoint."
    [request] = model.main()
    assert request.headers["authorization"] == f"Bearer {secret}"
    assert request.body["model"] == "served-model"
    assert set(chat_tools(request)) >= AMUX_TOOLS
    [state] = sessions(memory_hub.home)
    assert state["agent_session"] and secret not in json.dumps(state)


def test_copilot_runs_isolated_as_another_user(world: World) -> None:
    """(7) `amux run --as-user`: Copilot as the target, in the target's own Copilot home
    and package cache (the launcher's are never passed on), pointed at the model with
    `--endpoint`; its memory call lands in the Hub under the target's principal. The pinned
    install under the repository is world-readable and -executable."""
    copilot = npm_bin("copilot")
    native = copilot.resolve().parent.parent / "copilot-linux-x64" / "copilot"
    assert os.stat(native).st_mode & 0o005 == 0o005
    a = user_a(world)
    entry = world.users[a]
    upsert = ToolCall("amux-memory_upsert", {"path": "notes/copilot.md",
                                             "content": "from copilot\n",
                                             "expected_revision": "absent"})
    with MockModel([upsert, Text("Saved.")]) as model:
        done = world.launch(a, str(copilot), "-p", "Remember.", timeout=90, options=(
            "--endpoint", model.base_url, "--model", "mock-model"), env={
            "COPILOT_HOME": str(world.scratch / "launcher-copilot"),  # never A's
            "COPILOT_CUSTOM_INSTRUCTIONS_DIRS": str(world.scratch)})
        assert isinstance(done, subprocess.CompletedProcess)
        assert done.returncode == 0, done.stdout + done.stderr
    [result] = model.tool_results("amux-memory_upsert")
    assert not result.is_error, result.text
    assert (world.scope_dir(a) / "notes" / "copilot.md").read_text() == "from copilot\n"
    [state] = sessions(world.hub.home)
    assert state["as_user"] == a
    kept = Path(entry.pw_dir) / ".copilot" / "session-state" / state["agent_session"]
    assert (kept / "events.jsonl").is_file()
    assert not (world.scratch / "launcher-copilot").exists()
    assert "amux memory protocol" in system_text(model.main()[0])
