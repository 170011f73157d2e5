"""The real OpenCode CLI (`opencode run`, opencode-ai 1.18.33) against the scripted model.

Research for issue 15 (docs/agent-findings-opencode.md), before any adapter exists: what
OpenCode does when it is driven the way an adapter would drive it, with nothing but the
per-launch channels. Everything is real but the model: the native `opencode` binary, the
repository's own `amux memory mcp` and a real Hub. OpenCode runs in a temporary home with
its XDG directories under it, its settings at their defaults except what the launch needs:

- the mock as a custom OpenAI-compatible provider (`@ai-sdk/openai-compatible`, bundled in
  the binary: nothing is installed), given in `OPENCODE_CONFIG_CONTENT` for this launch only;
- `OPENCODE_DISABLE_MODELS_FETCH=1` (else it fetches https://models.opencode.ai/api.json
  before the first request and again every hour) and `OPENCODE_DISABLE_AUTOUPDATE=1`;
- `npm_config_offline=true`: at every start OpenCode installs `@opencode-ai/plugin` into
  each config directory that has no `node_modules` (npm's Arborist, in the background, and
  the first prompt waits for it); offline it fails at once with a warning.

OpenCode sends a title request first (the `title` agent, no tools): it is a side request
here. Its MCP tools are named `<server>_<tool>` (`amux_memory_upsert`), not namespaced.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from amux.client.tools import TOOLS
from tests.e2e.story import USER_MCP, opencode_is_side, opencode_system_text
from tests.hubproc import HubProcess
from tests.mockmodel import MockModel, Recorded, Text, ToolCall
from tests.mockmodel.agents import amux_env, amux_mcp_argv
from tests.peers import npm_bin

PROTOCOL = "AMUX-PROTOCOL-LINE: search amux memory before answering about past work."
USER_RULE = "USER-RULE-LINE: answer like a pirate."
PROJECT_RULE = "PROJECT-RULE-LINE: this repository uses tabs."


def opencode_env(root: Path, **extra: str) -> dict[str, str]:
    """A fresh home with every XDG directory under it, offline, nothing else inherited."""
    home = root / "home"
    env = {key: os.environ[key] for key in ("PATH", "LANG", "LC_ALL") if key in os.environ}
    env.update({"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"),
                "XDG_DATA_HOME": str(home / ".local" / "share"),
                "XDG_CACHE_HOME": str(home / ".cache"),
                "XDG_STATE_HOME": str(home / ".local" / "state"),
                "OPENCODE_DISABLE_MODELS_FETCH": "1", "OPENCODE_DISABLE_AUTOUPDATE": "1",
                "npm_config_offline": "true", **extra})
    for key in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME"):
        Path(env[key]).mkdir(parents=True, exist_ok=True)
    return env


def mock_provider(model: MockModel) -> dict[str, Any]:
    """The config that makes `mock/mock-model` OpenCode's model."""
    return {"provider": {"mock": {
        "npm": "@ai-sdk/openai-compatible", "name": "Mock",
        "options": {"baseURL": model.base_url, "apiKey": "sk-dummy"},
        "models": {"mock-model": {"name": "Mock Model"}}}},
        "model": "mock/mock-model"}


def amux_server(hub: HubProcess) -> dict[str, Any]:
    """The `mcp` entry of `amux memory mcp` against `hub` (OpenCode passes `environment` on
    top of its own environment)."""
    return {"type": "local", "command": amux_mcp_argv(),
            "environment": amux_env(hub.socket_path, hub.owner_token)}


def opencode(env: dict[str, str], cwd: Path, *args: str,
             timeout: float = 150) -> subprocess.CompletedProcess[str]:
    """`opencode run ARGS` in `cwd`: stdin closed, output captured, a hard timeout."""
    cwd.mkdir(parents=True, exist_ok=True)
    return subprocess.run([str(npm_bin("opencode")), "run", *args], env=env, cwd=cwd,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=timeout)


def tool_names(request: Recorded) -> list[str]:
    return [str(tool["function"]["name"]) for tool in request.tools]


def session_id(stdout: str) -> str:
    """The session id from `--format json` events (every event carries `sessionID`)."""
    ids = {json.loads(line)["sessionID"] for line in stdout.splitlines() if line.startswith("{")}
    assert len(ids) == 1, stdout
    return ids.pop()


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file under `root` but the `.gitignore` OpenCode keeps in each config directory
    for its own npm install."""
    return {str(path.relative_to(root)): path.read_bytes()
            for path in sorted(root.rglob("*")) if path.is_file() and path.name != ".gitignore"}


@pytest.fixture
def opencode_bin() -> Path:
    return npm_bin("opencode")


def test_opencode_answers_from_the_mock(opencode_bin: Path, tmp_path: Path) -> None:
    with MockModel([Text("Hello from the mock.")], is_side=opencode_is_side) as model:
        env = opencode_env(tmp_path, OPENCODE_CONFIG_CONTENT=json.dumps(mock_provider(model)))
        done = opencode(env, tmp_path / "work", "Hi.")
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "Hello from the mock."
    [title] = model.side()  # the title agent's request, without tools
    assert "title generator" in opencode_system_text(title)
    [first] = model.main()
    assert first.path == "/v1/chat/completions" and first.body["stream"] is True
    assert opencode_system_text(first).startswith("You are opencode")
    assert first.body["messages"][1:] == [{"role": "user", "content": "Hi."}]
    # OpenCode's own tools: no memory tool among them.
    assert sorted(tool_names(first)) == ["bash", "edit", "glob", "grep", "read", "skill",
                                         "task", "todowrite", "webfetch", "write"]
    assert "memory" not in opencode_system_text(first).lower()


def test_opencode_calls_the_amux_mcp_server_declared_for_one_launch(
        opencode_bin: Path, memory_hub: HubProcess, tmp_path: Path) -> None:
    """The launch's own config (`OPENCODE_CONFIG_CONTENT`) adds an instruction file and the
    `amux` server to the user's global and project config: the user's instructions, servers
    and OpenCode's system prompt stay, the protocol follows them, the memory tools arrive with
    their schemas and are allowed at OpenCode's defaults, the upsert lands in the Hub, and no
    config file is written."""
    home_config = tmp_path / "home" / ".config" / "opencode"
    home_config.mkdir(parents=True)
    (home_config / "user-rules.md").write_text(USER_RULE + "\n")
    (home_config / "opencode.json").write_text(json.dumps({  # with `$schema`, else OpenCode
        "$schema": "https://opencode.ai/config.json",      # adds it to the file itself
        "instructions": [str(home_config / "user-rules.md")],
        "mcp": {"mine": {"type": "local", "command": [sys.executable, str(USER_MCP)]}}}))
    work = tmp_path / "work"
    work.mkdir()
    (work / "AGENTS.md").write_text(PROJECT_RULE + "\n")
    protocol = tmp_path / "amux-session" / "opencode-instructions.md"
    protocol.parent.mkdir()
    protocol.write_text(PROTOCOL + "\n")
    before = snapshot(tmp_path / "home" / ".config") | snapshot(work)
    upsert = ToolCall("amux_memory_upsert", {"path": "notes/opencode.md",
                                             "content": "# Note\nsaved by OpenCode\n",
                                             "expected_revision": "absent"})
    with MockModel([upsert, Text("Saved.")], is_side=opencode_is_side) as model:
        launch = {**mock_provider(model), "instructions": [str(protocol)],
                  "mcp": {"amux": amux_server(memory_hub)}}
        env = opencode_env(tmp_path, OPENCODE_CONFIG_CONTENT=json.dumps(launch))
        done = opencode(env, work, "Remember this note.")
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "Saved."
    first, second = model.main()
    system = opencode_system_text(first)
    assert system.startswith("You are opencode")
    # Project AGENTS.md, then the `instructions` of every layer in order (global, then this
    # launch's): each file as "Instructions from: PATH\nTEXT", the protocol last.
    assert system.index(PROJECT_RULE) < system.index(USER_RULE) < system.index(PROTOCOL)
    assert f"Instructions from: {protocol}\n{PROTOCOL}\n" in system
    assert system.count(PROTOCOL) == 1
    # The amux tools with their schemas, beside the user's own server and OpenCode's tools.
    tools = {str(tool["function"]["name"]): tool["function"] for tool in first.tools}
    for tool in TOOLS:
        sent = tools[f"amux_{tool['name']}"]
        assert sent["parameters"]["properties"] == tool["inputSchema"]["properties"]
    assert {"mine_user_lookup", "mine_user_ping", "bash", "read"} <= set(tools)
    assert tool_names(first) == tool_names(second)
    [result] = model.tool_results("amux_memory_upsert")
    assert not result.is_error and result.request == second.index
    status, stored = memory_hub.call("/v1/memory/get", {"path": "notes/opencode.md"})
    assert status == 200 and stored["content"] == "# Note\nsaved by OpenCode\n"
    assert stored["revision"] in result.text
    assert snapshot(tmp_path / "home" / ".config") | snapshot(work) == before


def test_opencode_resumes_its_session_with_the_same_system_prompt(
        opencode_bin: Path, tmp_path: Path) -> None:
    """`opencode run --session ID` continues the session a first run created (its id learnt
    from `--format json`): the history comes back and the system message, with the launch's
    instruction file, is byte for byte the one of the first request."""
    protocol = tmp_path / "amux-session" / "opencode-instructions.md"
    protocol.parent.mkdir()
    protocol.write_text(PROTOCOL + "\n")
    with MockModel([Text("First.")], [Text("Second.")], is_side=opencode_is_side) as model:
        launch = {**mock_provider(model), "instructions": [str(protocol)]}
        env = opencode_env(tmp_path, OPENCODE_CONFIG_CONTENT=json.dumps(launch))
        first_run = opencode(env, tmp_path / "work", "--format", "json", "One.")
        assert first_run.returncode == 0, first_run.stderr[-3000:]
        ses = session_id(first_run.stdout)
        assert ses.startswith("ses_")
        again = opencode(env, tmp_path / "work", "--session", ses, "--format", "json", "Two.")
        assert again.returncode == 0, again.stderr[-3000:]
        assert session_id(again.stdout) == ses
    first, resumed = model.main()
    assert resumed.body["messages"][0] == first.body["messages"][0]
    assert PROTOCOL in opencode_system_text(resumed)
    assert [m["content"] for m in resumed.body["messages"][1:]] == ["One.", "First.", "Two."]


def test_opencode_asks_for_mcp_tools_under_a_users_ask_rule_unless_the_launch_allows_them(
        opencode_bin: Path, memory_hub: HubProcess, tmp_path: Path) -> None:
    """A user's `permission: {"*": "ask"}`: in `opencode run` the ask is rejected (exit 0, no
    tool result); the launch's exact tool names set to `allow` come after the user's `*` and
    win."""
    search = ToolCall("amux_memory_search", {"query": "tabs"})
    allowed = {f"amux_{tool['name']}": "allow" for tool in TOOLS}
    results = []
    for ours in (None, allowed):
        root = tmp_path / ("allowed" if ours else "asked")
        config = root / "home" / ".config" / "opencode"
        config.mkdir(parents=True)
        (config / "opencode.json").write_text(json.dumps({
            "$schema": "https://opencode.ai/config.json", "permission": {"*": "ask"}}))
        with MockModel([search, Text("Searched.")], is_side=opencode_is_side) as model:
            launch = {**mock_provider(model), "mcp": {"amux": amux_server(memory_hub)},
                      **({"permission": ours} if ours else {})}
            done = opencode(opencode_env(root, OPENCODE_CONFIG_CONTENT=json.dumps(launch)),
                            root / "work", "Search.")
        assert done.returncode == 0, done.stderr[-3000:]
        results.append((done.stdout.strip(), model.tool_results("amux_memory_search")))
    (asked_out, asked), (allowed_out, [result]) = results
    assert asked_out == "" and asked == []
    assert allowed_out == "Searched." and not result.is_error
    assert "amux memory search results" in result.text


def test_opencode_import_keeps_a_session_id_chosen_up_front(opencode_bin: Path,
                                                           tmp_path: Path) -> None:
    """`--session` refuses an id it does not know, but `opencode import` stores a session with
    the id its file names, and `run --session` then continues that one."""
    chosen = "ses_0000amuxchosen000000000000"
    with MockModel([Text("Chosen.")], is_side=opencode_is_side) as model:
        env = opencode_env(tmp_path, OPENCODE_CONFIG_CONTENT=json.dumps(mock_provider(model)))
        work = tmp_path / "work"
        unknown = opencode(env, work, "--session", chosen, "Hi.")
        assert unknown.returncode == 1 and "Session not found" in unknown.stderr
        now = 1_796_000_000_000
        (tmp_path / "session.json").write_text(json.dumps({"info": {
            "id": chosen, "slug": "amux", "projectID": "global", "directory": str(work),
            "title": "amux session", "version": "1.18.33",
            "time": {"created": now, "updated": now}}, "messages": []}))
        imported = subprocess.run([str(opencode_bin), "import", str(tmp_path / "session.json")],
                                  env=env, cwd=work, stdin=subprocess.DEVNULL,
                                  capture_output=True, text=True, timeout=60)
        assert imported.returncode == 0, imported.stderr[-3000:]
        assert f"Imported session: {chosen}" in imported.stdout
        done = opencode(env, work, "--session", chosen, "--format", "json", "Hi.")
        assert done.returncode == 0, done.stderr[-3000:]
    assert session_id(done.stdout) == chosen
    [first] = model.main()
    assert [m["role"] for m in first.body["messages"]] == ["system", "user"]
