"""The real Qwen Code 0.24.4 through the real `python -m amux run qwen -- …`, against the
scripted model, on a real Hub.

Only the model is scripted (tests/mockmodel, Chat Completions); Qwen, the launcher, `amux
memory mcp` and the Hub are real. Qwen runs at its defaults (approval mode `auto`, managed
auto-memory on) with a user's own set-up: the OpenAI auth it selects from its three
variables, a global `~/.qwen/QWEN.md`, a project `AGENTS.md`, an MCP server of theirs in
`~/.qwen/settings.json` and their own `--append-system-prompt`. Usage statistics are off
(`qwen_env`: a sandbox setting, not amux's). Qwen's auto-memory extractor and its
approval classifier are side requests (`qwen_is_side`) unless a test scripts them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from amux.client.tools import TOOLS
from amux.protocol.render import render
from tests.e2e.story import USER_MCP, amux_run, bounded, chat_tools, sessions
from tests.hubproc import HubProcess
from tests.isolation.world import World, user_a
from tests.mockmodel import MockModel, Recorded, Text, ToolCall
from tests.mockmodel.agents import QWEN_EXTRACTOR, base_env, qwen_env, qwen_is_side
from tests.peers import npm_bin

PATH = "preferences/editor.md"
FACT = "Indent with tabs.\n"
USER_GLOBAL = "USER-GLOBAL-RULE: answer like a pirate."
PROJECT_RULE = "PROJECT-RULE-LINE: this repository uses tabs."
USER_APPEND = "USER-APPEND-LINE: be brief."
UPSERT = ToolCall("mcp__amux__memory_upsert", {"path": PATH, "content": FACT,
                                               "expected_revision": "absent"})
SEARCH = ToolCall("mcp__amux__memory_search", {"query": "tabs"})
AMUX_TOOLS = {f"mcp__amux__{tool['name']}" for tool in TOOLS}
AUTO_MEMORY = "# auto memory"
"""The heading of Qwen's managed auto-memory section in its system prompt."""
TIMEOUT = 50


def user_setup(root: Path, model: MockModel) -> tuple[dict[str, str], Path]:
    """The user's environment and project (module doc); nothing of amux in either."""
    env = qwen_env(root, model, {"$version": 4, "mcpServers": {
        "mine": {"command": sys.executable, "args": [str(USER_MCP)]}}})
    (Path(env["HOME"]) / ".qwen" / "QWEN.md").write_text(USER_GLOBAL + "\n")
    work = root / "work"
    work.mkdir()
    (work / "AGENTS.md").write_text(PROJECT_RULE + "\n")
    return env, work


def qwen(hub: HubProcess, env: dict[str, str], work: Path, *args: str,
         ) -> subprocess.CompletedProcess[str]:
    """`amux run qwen -- ARGS` (`amux_run`)."""
    return amux_run(hub, env, work, str(npm_bin("qwen")), "--", *args)


def system(request: Recorded) -> str:
    [text] = request.instruction_parts
    return text


def memory_files(home: Path) -> list[Path]:
    """What Qwen's managed auto-memory keeps: `~/.qwen/memories/` and the project memory
    under `~/.qwen/projects/*/memory/`."""
    qwen_dir = home / ".qwen"
    return [path for pattern in ("memories/**/*", "projects/*/memory/**/*")
            for path in qwen_dir.glob(pattern) if path.is_file()]


def test_qwen_saves_recalls_and_resumes_through_amux(memory_hub: HubProcess,
                                                     tmp_path: Path) -> None:
    """(1) the protocol ends Qwen's system message, after the user's QWEN.md, AGENTS.md and
    their own appended text, and the five tools come with their schemas (not deferred)
    beside the user's server; (2) a fact saved in one session lands in the Hub and a new
    session finds it; (3) resuming the first amux session continues the same Qwen session
    with a byte-identical system message and tools; native memory stays off throughout."""
    with MockModel([UPSERT, Text("Saved.")], [SEARCH, Text("You indent with tabs.")],
                   [Text("Resumed.")], is_side=qwen_is_side) as model:
        env, work = user_setup(tmp_path, model)
        settings = Path(env["HOME"]) / ".qwen" / "settings.json"
        before = settings.read_bytes()
        qwen(memory_hub, env, work, "-p", "Remember: I indent with tabs.",
             "--append-system-prompt", USER_APPEND)
        qwen(memory_hub, env, work, "-p", "How do I indent?", "--append-system-prompt",
             USER_APPEND)
        first, second = sessions(memory_hub)
        resumed = amux_run(memory_hub, env, work, "--resume", first["id"], "--", "-p",
                           "Still there?")
    main = model.main()
    opening = main[0]
    text = system(opening)
    protocol = render("mcp")
    # (1) Qwen's prompt, the user's context files and appended text, then the protocol.
    assert text.startswith("You are Qwen Code")
    assert text.endswith(f"{USER_APPEND}\n\n{protocol.rstrip()}")  # (Qwen trims it)
    assert text.index(USER_GLOBAL) < text.index(PROJECT_RULE) < text.index(USER_APPEND)
    assert text.count(protocol.rstrip()) == 1 and AUTO_MEMORY not in text
    sent = chat_tools(opening)
    for tool in TOOLS:
        assert sent[f"mcp__amux__{tool['name']}"]["parameters"]["properties"] == \
            tool["inputSchema"]["properties"]
    assert not any(name.startswith("mcp__mine__") for name in sent)  # theirs: deferred
    assert "mcp__mine__user_ping" in json.dumps(opening.body["messages"][1])
    # (2) Saved without a prompt (headless, approval mode auto), found by the next session.
    [saved] = model.tool_results("mcp__amux__memory_upsert")
    assert not saved.is_error and '"created": true' in saved.text.replace('":true', '": true')
    status, stored = memory_hub.call("/v1/memory/get", {"path": PATH})
    assert status == 200 and stored["content"] == FACT
    [found] = model.tool_results("mcp__amux__memory_search")
    assert not found.is_error and PATH in found.text
    # (3) The Qwen session amux chose up front, resumed: same system message and tools,
    # the history replayed, then the new prompt.
    assert first["agent_session"] != second["agent_session"]
    chats = Path(env["HOME"]) / ".qwen" / "projects"
    assert len(list(chats.glob(f"*/chats/{first['agent_session']}.jsonl"))) == 1
    again = main[-1]
    assert again.conversation == opening.conversation + 2 and "Resumed." in resumed.stdout
    assert again.body["messages"][0] == opening.body["messages"][0]
    assert again.tools == opening.tools
    assert "Remember: I indent with tabs." in json.dumps(again.body["messages"])
    assert "Still there?" in json.dumps(again.body["messages"][-1])
    # Native memory off: no extractor, no memory files; the user's settings untouched.
    assert not [r for r in model.side() if QWEN_EXTRACTOR in json.dumps(r.body)]
    assert memory_files(Path(env["HOME"])) == []
    assert settings.read_bytes() == before
    assert (settings.parent / "QWEN.md").read_text() == USER_GLOBAL + "\n"


TEAM_RULE = "TEAM-RULE-LINE: the team writes Go."


def user_memory(root: Path) -> Path:
    """The user memory file the scripted extractor writes (Qwen's USER memory directory)."""
    return root / "home" / ".qwen" / "memories" / "user" / "prefers-tabs.md"


def memory_setup(root: Path, model: MockModel) -> tuple[dict[str, str], Path]:
    """`user_setup`, plus machine system settings of the user's own (named by
    QWEN_CODE_SYSTEM_SETTINGS_PATH) that add a context file name, and that file in the
    project: the launch's own system settings must carry them over."""
    env, work = user_setup(root, model)
    machine = root / "etc" / "qwen-code"
    machine.mkdir(parents=True)
    (machine / "settings.json").write_text(json.dumps(
        {"$version": 4, "context": {"fileName": ["QWEN.md", "AGENTS.md", "TEAM.md"]}}))
    (work / "TEAM.md").write_text(TEAM_RULE + "\n")
    env["QWEN_CODE_SYSTEM_SETTINGS_PATH"] = str(machine / "settings.json")
    return env, work


def extractor_script(note: Path) -> list[list[Any]]:
    """The main turn answers without a tool (Qwen's extractor runs after such a turn); the
    extractor, scripted as the next conversation, writes a user memory."""
    return [[Text("Noted.")],
            [ToolCall("write_file", {"file_path": str(note), "content": "user prefers tabs\n"}),
             Text("Done.")]]


def classifier_only(request: Recorded) -> bool:
    """`qwen_is_side` but for the extractor, which these tests script."""
    return qwen_is_side(request) and QWEN_EXTRACTOR not in json.dumps(request.body)


def test_qwens_own_memory_is_off_in_an_amux_launch_and_on_without_it(memory_hub: HubProcess,
                                                                     tmp_path: Path) -> None:
    """Both runs let file edits through (`--approval-mode=auto-edit`, a user's flag). The
    control, plain Qwen: its `# auto memory` section is in the system message, its extractor
    request follows the turn and writes the user memory. Through
    amux: no section, no extractor request, no memory file; the launch's system settings file
    holds the machine's settings (their context file name still applies) with both memory
    keys off."""
    prompt = ("--approval-mode=auto-edit", "-p", "Remember: I always prefer tabs.")
    note = user_memory(tmp_path / "control")
    with MockModel(*extractor_script(note), is_side=classifier_only) as control:
        env, work = memory_setup(tmp_path / "control", control)
        plain = bounded([str(npm_bin("qwen")), *prompt], env, work)
    assert plain.returncode == 0, plain.stderr[-2000:]
    [turn, extractor, *_] = control.main()
    assert AUTO_MEMORY in system(turn) and ".qwen/memories" in system(turn)
    assert TEAM_RULE in system(turn)
    assert QWEN_EXTRACTOR in system(extractor)
    assert note.read_text() == "user prefers tabs\n"
    note = user_memory(tmp_path / "amux")
    with MockModel(*extractor_script(note), is_side=classifier_only) as model:
        env, work = memory_setup(tmp_path / "amux", model)
        launched = qwen(memory_hub, env, work, *prompt)
    assert launched.stdout.strip() == "Noted."
    [turn] = model.main()
    assert AUTO_MEMORY not in system(turn) and ".qwen/memories" not in system(turn)
    assert TEAM_RULE in system(turn)  # the machine's system settings still apply
    assert not [r for r in model.requests if QWEN_EXTRACTOR in json.dumps(r.body)]
    assert memory_files(Path(env["HOME"])) == [] and not note.parent.exists()
    [state] = sessions(memory_hub)
    ours = memory_hub.home / "sessions" / state["id"] / "qwen-system-settings.json"
    assert json.loads(ours.read_text()) == {
        "$version": 4, "context": {"fileName": ["QWEN.md", "AGENTS.md", "TEAM.md"]},
        "memory": {"enableManagedAutoMemory": False, "enableManagedAutoDream": False}}
    assert oct(ours.stat().st_mode & 0o777) == "0o600"


def test_qwen_without_memory_and_with_the_hub_down(hub: HubProcess, tmp_path: Path) -> None:
    """Memory off on the Hub, then the Hub unreachable: Qwen as it is (its own auto-memory
    section, the user's files and appended text), no amux tools or protocol, a warning
    naming why, and the session still resumable (its id chosen up front)."""
    with MockModel([Text("Off.")], [Text("Down.")], is_side=qwen_is_side) as model:
        env, work = user_setup(tmp_path, model)
        off = qwen(hub, env, work, "-p", "Hi.", "--append-system-prompt", USER_APPEND)
        down = amux_run(hub, {**env, "AMUX_HUB": f"unix:{tmp_path}/no-hub.sock",
                              "AMUX_TOKEN": "amux_" + "d" * 43}, work, str(npm_bin("qwen")),
                        "--", "-p", "Hi again.")
    assert "memory.enabled = false" in off.stderr and "hub_unreachable" in down.stderr
    assert off.stdout.strip() == "Off." and down.stdout.strip() == "Down."
    first, second = model.main()
    for request in (first, second):
        assert not AMUX_TOOLS & set(chat_tools(request))
        assert "amux memory protocol" not in system(request)
        assert AUTO_MEMORY in system(request) and USER_GLOBAL in system(request)
    text = system(first)  # theirs passed on as given, Qwen's auto-memory section after it
    assert text.index(USER_APPEND) < text.index(AUTO_MEMORY)
    assert all(state["agent_session"] for state in sessions(hub))


def test_qwen_reaches_an_endpoint_with_a_key_it_never_holds(memory_hub: HubProcess,
                                                            tmp_path: Path) -> None:
    """`--endpoint` on a home with no auth of the user's (no OPENAI_* variable, no settings):
    Qwen uses the endpoint's model with the key from the named variable, which no argv,
    plan or state holds; the memory tools come too."""
    secret = "sk-endpoint-" + "7" * 20
    with MockModel([SEARCH, Text("From the endpoint.")], is_side=qwen_is_side) as model:
        env = {**base_env(tmp_path), "QWEN_USAGE_STATISTICS_ENABLED": "false",
               "MY_ENDPOINT_KEY": secret}
        done = amux_run(memory_hub, env, tmp_path / "work", "--endpoint", model.base_url,
                        "--model", "served-model", "--endpoint-key-env", "MY_ENDPOINT_KEY",
                        str(npm_bin("qwen")), "--", "-p", "Hi.")
    assert done.stdout.strip() == "From the endpoint."
    first, second = model.main()
    for request in (first, second):
        assert request.headers["authorization"] == f"Bearer {secret}"
        assert request.body["model"] == "served-model"
    assert set(chat_tools(first)) >= AMUX_TOOLS
    [found] = model.tool_results("mcp__amux__memory_search")
    assert not found.is_error
    [state] = sessions(memory_hub)
    assert state["agent_session"] and secret not in json.dumps(state)


def test_qwen_runs_isolated_as_another_user(world: World) -> None:
    """`amux run --as-user`: Qwen as the target, in the target's own `~/.qwen` (the
    launcher's QWEN_HOME is never passed on), pointed at the model by `--endpoint`; its
    memory call lands in the Hub under the target's principal and the session it keeps is
    the one amux chose. The pinned install is world-readable, so the target runs it."""
    qwen_bin = npm_bin("qwen")
    assert os.stat(qwen_bin.resolve()).st_mode & 0o005 == 0o005
    a = user_a(world)
    entry = world.users[a]
    upsert = ToolCall("mcp__amux__memory_upsert", {"path": "notes/qwen.md",
                                                   "content": "from qwen\n",
                                                   "expected_revision": "absent"})
    with MockModel([upsert, Text("Saved.")], is_side=qwen_is_side) as model:
        config = Path(entry.pw_dir) / ".qwen"  # provisioned for A explicitly
        config.mkdir(parents=True)
        (config / "settings.json").write_text(json.dumps(
            {"$version": 4, "privacy": {"usageStatisticsEnabled": False}}))
        for path in (config, config / "settings.json"):
            os.chown(path, entry.pw_uid, entry.pw_gid)
        done = world.launch(a, str(qwen_bin), "-p", "Remember.", env={
            "QWEN_HOME": "/nonexistent/launchers-own", "QWEN_USAGE_STATISTICS_ENABLED": "false"},
            options=("--endpoint", model.base_url, "--model", "mock-model"), timeout=TIMEOUT)
        assert isinstance(done, subprocess.CompletedProcess)
        assert done.returncode == 0, done.stdout + done.stderr
    [result] = model.tool_results("mcp__amux__memory_upsert")
    assert not result.is_error, result.text
    assert (world.scope_dir(a) / "notes" / "qwen.md").read_text() == "from qwen\n"
    [state] = sessions(world.hub)
    assert state["as_user"] == a
    [kept] = list((config / "projects").glob(f"*/chats/{state['agent_session']}.jsonl"))
    assert kept.stat().st_uid == entry.pw_uid
    assert "amux memory protocol" in system(model.main()[0])


PROC_SCAN = '''import os, sys
secret, out = os.environ["GITHUB_PERSONAL_ACCESS_TOKEN"], sys.argv[1]
seen = []
for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            argv = handle.read()
    except OSError:
        continue
    if argv:
        seen.append({"pid": int(pid), "argv": argv.decode(errors="replace").split("\\0"),
                     "secret": secret.encode() in argv})
with open(out, "w") as handle:
    import json
    json.dump(seen, handle)
os.execv(sys.executable, [sys.executable, *sys.argv[2:]])
'''
"""Run as the user's own MCP server, the token in its environment from the user's file:
while Qwen runs, it records every process's argv (what `ps` shows every local user), then
becomes `user_mcp.py`."""


def test_a_token_in_the_users_mcp_config_file_never_reaches_any_argv(
        memory_hub: HubProcess, tmp_path: Path) -> None:
    """Issue 33: `amux run qwen -- --mcp-config ~/mcp.json` with a 0600 file holding an MCP
    server's token. Qwen gets the merged servers through a 0600 file in the session's
    directory, not as inline JSON, so the token is in no process's argv while Qwen runs
    (its server, started from that file, still gets it) and not in `--dry-run`."""
    secret = f"ghp_{os.urandom(18).hex()}"
    with MockModel([Text("Hello.")], is_side=qwen_is_side) as model:
        env, work = user_setup(tmp_path, model)
        scan, seen = tmp_path / "scan.py", tmp_path / "seen.json"
        scan.write_text(PROC_SCAN)
        config = Path(env["HOME"]) / "mcp.json"
        config.write_text(json.dumps({"mcpServers": {"gh": {
            "command": sys.executable, "args": [str(scan), str(seen), str(USER_MCP)],
            "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": secret}}}}))
        config.chmod(0o600)
        dry = amux_run(memory_hub, env, work, "--dry-run", str(npm_bin("qwen")), "--",
                       "--mcp-config", str(config), "-p", "hi")
        done = qwen(memory_hub, env, work, "--mcp-config", str(config), "-p", "hi")
    assert secret not in dry.stdout + dry.stderr
    written = [f for f in json.loads(dry.stdout)["writes"] if f["path"].endswith("mcp.json")]
    assert written and "withheld" in written[0]["content"] and "text" not in written[0]
    processes = json.loads(seen.read_text())
    assert [p["argv"] for p in processes if p["secret"]] == []
    qwen_argv = [p["argv"] for p in processes if any("--mcp-config" in a for a in p["argv"])]
    assert qwen_argv, "the scan saw Qwen's command line"
    assert "Hello." in done.stdout
    [opening] = model.main()
    assert "mcp__gh__user_ping" in json.dumps(opening.body)  # Qwen read the file: its server
    files = list((memory_hub.home / "sessions").glob("**/qwen-mcp.json"))
    assert files and all(f.stat().st_mode & 0o777 == 0o600 for f in files)
