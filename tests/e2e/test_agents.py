"""The real Claude Code, Codex and Pi launched through `amux run` against a scripted model.

One story per agent, on a real Hub: (1) the first request carries the user's own
instructions and the protocol in the agent's instruction channel; (2) native memory is
off; (3) the model saves a memory (Claude and Codex through the MCP server, Pi through
`amux memory` in bash) and it lands in the store; (4) a new session finds it; (5) a third
corrects it (read, conditional update) and a fourth forgets it; (6) resuming the first
session sends the same instructions again. Claude's memory tools are sent up front under its
default tool search while the user's own MCP servers stay deferred. Only the model is scripted
(tests/mockmodel); the agent, the launcher, the MCP server and the Hub are real.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from amux.client.tools import TOOLS
from amux.protocol.render import render
from tests.e2e.story import (
    FIRST,
    PATH,
    PROMPTS,
    SECOND,
    USER_MCP,
    amux_run,
    check_store_story,
    mcp_results,
    mcp_story,
    revision,
    sessions,
)
from tests.hubproc import HubProcess
from tests.mockmodel import MockModel, Recorded, Text, ToolCall, mcp
from tests.mockmodel.agents import claude_env, codex_env, pi_env
from tests.peers import npm_bin, npm_old_bin

USER_RULE = "USER RULE: answer like a pirate."


def without_billing(parts: list[str]) -> list[str]:
    return [part for part in parts if not part.startswith("x-anthropic-billing-header:")]


@pytest.fixture
def hub_on(memory_hub: HubProcess) -> HubProcess:
    return memory_hub


# -- Claude Code ----------------------------------------------------------------------------


def test_claude_code(hub_on: HubProcess, tmp_path: Path) -> None:
    claude = npm_bin("claude")
    with MockModel(*mcp_story()) as model:
        env = claude_env(tmp_path, model)
        work = tmp_path / "work"
        for prompt in PROMPTS:
            amux_run(hub_on, env, work, str(claude), "--", "-p", prompt,
                     "--append-system-prompt", USER_RULE, "--output-format", "json")
        first_id = sessions(hub_on)[0]["id"]
        amux_run(hub_on, env, work, "--resume", first_id, "--", "-p", "Still there?",
                 "--output-format", "json")
    main = model.main()
    first = main[0]
    protocol = render("mcp")
    assert first.instructions.endswith(f"{USER_RULE}\n\n{protocol}")  # (1)
    assert "# Memory" not in first.instructions  # (2) Claude's auto-memory section is gone
    assert {"mcp__amux__memory_search", "mcp__amux__memory_upsert"} <= tool_names(first)
    check_store_story(hub_on, model, mcp_results(model))  # (3)-(5)
    resumed = next(r for r in main if r.conversation == 4)
    # (6) Claude's first system block is a per-request billing attribution line whose
    # `cc_version` suffix is a fingerprint of the request (it differs now and then between
    # a conversation's requests); the instructions are the rest, byte for byte.
    assert without_billing(resumed.instruction_parts) == without_billing(first.instruction_parts)
    assert PROMPTS[0] in json.dumps(resumed.body)  # the same conversation
    assert not model.side()


def tool_names(request: Recorded) -> set[str]:
    return {str(tool.get("name")) for tool in request.tools}




def test_claude_sends_the_memory_tools_up_front_and_leaves_the_users_deferred(
        hub_on: HubProcess, tmp_path: Path) -> None:
    """Under Claude's default tool search, a user with MCP servers of their own (one in
    their `.claude.json`, one in their own `--mcp-config`): the first request carries the
    five memory tools with their schemas, while the user's tools stay behind ToolSearch."""
    claude = npm_bin("claude")
    server = {"type": "stdio", "command": sys.executable, "args": [str(USER_MCP)]}
    with MockModel([Text("Hello.")]) as model:
        env = claude_env(tmp_path, model)
        (tmp_path / "claude").mkdir()
        (tmp_path / "claude" / ".claude.json").write_text(
            json.dumps({"mcpServers": {"mine": server}}))
        theirs = json.dumps({"mcpServers": {"flagged": server}})
        amux_run(hub_on, env, tmp_path / "work", str(claude), "--", "-p", "Hi.",
                 f"--mcp-config={theirs}")
    first = model.main()[0]
    tools = {str(tool.get("name")): tool for tool in first.tools}
    for tool in TOOLS:
        sent = tools.get(f"mcp__amux__{tool['name']}")
        assert sent is not None, sorted(tools)
        assert sent["input_schema"] == tool["inputSchema"]
        assert "defer_loading" not in sent
    assert "ToolSearch" in tools  # tool search is on
    assert not [name for name in tools if name.startswith(("mcp__mine__", "mcp__flagged__"))]
    listed = json.dumps(first.body["messages"])  # where Claude names its deferred tools
    for name in ("mcp__mine__user_lookup", "mcp__flagged__user_ping"):
        assert name in listed  # connected, and deferred
    assert "mcp__amux__" not in listed


# -- Codex ----------------------------------------------------------------------------------


CODEX_USER_CONFIG = f"""developer_instructions = {json.dumps(USER_RULE)}
[features]
memories = true
[memories]
use_memories = true
generate_memories = true
"""


def test_codex(hub_on: HubProcess, tmp_path: Path) -> None:
    codex = npm_bin("codex")
    slow = 3.0  # Codex's memory consolidation would start alongside the first turn
    with MockModel(*mcp_story(first_delay=slow)) as model:
        env = codex_env(tmp_path, model, CODEX_USER_CONFIG)
        user_config = (tmp_path / "codex" / "config.toml").read_bytes()
        summary = tmp_path / "codex" / "memories_v2" / "memory_summary.md"
        summary.parent.mkdir()
        summary.write_text("The user prefers vim.\n")  # Codex's own memory, from before
        work = tmp_path / "work"
        for prompt in PROMPTS:
            amux_run(hub_on, env, work, str(codex), "--", "exec", "--skip-git-repo-check",
                     prompt)
        first_state = sessions(hub_on)[0]
        assert first_state["agent_session"], "the Codex thread id was learned after the run"
        amux_run(hub_on, env, work, "--resume", first_state["id"], "--", "exec",
                 "--skip-git-repo-check", "Still there?")
    main = model.main()
    first = main[0]
    developer = "\n".join(first.instruction_parts)
    assert f"{USER_RULE}\n\n{render('mcp')}" in developer  # (1) merged, the user's kept
    # (2) the user's memories are on in config.toml, yet no consolidation sub-agent ran
    assert not [r for r in model.requests if r.subagent == "memory_consolidation"]
    assert "## Memory" not in developer and "prefers vim" not in developer
    assert summary.read_text() == "The user prefers vim.\n"  # amux never touches it
    assert (tmp_path / "codex" / "config.toml").read_bytes() == user_config  # never edited
    check_store_story(hub_on, model, mcp_results(model))  # (3)-(5)
    resumed = next(r for r in main if r.conversation == 4)
    assert resumed.instruction_parts[: len(first.instruction_parts)] == \
        first.instruction_parts  # (6)


def test_codex_without_amux_does_consolidate_memories(tmp_path: Path) -> None:
    """The positive control for test_codex's (2): the same user config and timing, the
    same Codex run directly, does send the memory-consolidation request."""
    codex = npm_bin("codex")
    with MockModel([Text("Hello.", delay=3.0)]) as model:
        env = codex_env(tmp_path, model, CODEX_USER_CONFIG)
        done = subprocess.run([str(codex), "exec", "--skip-git-repo-check", "Hi."], env=env,
                              cwd=tmp_path, stdin=subprocess.DEVNULL, capture_output=True,
                              text=True, timeout=120)
        assert done.returncode == 0, done.stderr[-2000:]
        assert model.wait_for(lambda r: r.subagent == "memory_consolidation", 5) is not None


# -- Pi -------------------------------------------------------------------------------------


def bash(command: str) -> ToolCall:
    return ToolCall("bash", {"command": command})


def test_pi(hub_on: HubProcess, tmp_path: Path) -> None:
    """Pi before MCP (0.73.1): the command-line route (Pi 1.x: tests/e2e/test_pi1.py)."""
    pi = npm_old_bin("pi")
    upsert = "amux memory upsert {path} --expected-revision {rev} <<'EOF'\n{text}EOF"
    with MockModel(
        [bash(upsert.format(path=PATH, rev="absent", text=FIRST)), Text("Saved.")],
        [bash("amux memory search tabs"), Text("You indent with tabs.")],
        [bash(f"amux memory show {shlex.quote(PATH)}"),
         bash(upsert.format(path=PATH, rev=revision(FIRST), text=SECOND)), Text("Corrected.")],
        [bash(f"amux memory forget {PATH} --expected-revision {revision(SECOND)}"),
         Text("Forgotten.")],
        [Text("Resumed.")],
    ) as model:
        env = pi_env(tmp_path, model)
        work = tmp_path / "work"
        for prompt in PROMPTS:
            amux_run(hub_on, env, work, str(pi), "--", "-p", "--model", "mock/mock-model",
                     "--append-system-prompt", USER_RULE, prompt)
        first_state = sessions(hub_on)[0]
        amux_run(hub_on, env, work, "--resume", first_state["id"], "--", "-p", "Still there?")
    main = model.main()
    first = main[0]
    assert f"{USER_RULE}\n\n{render('cli')}" in first.instructions  # (1)
    bash_results = [r.text for r in model.tool_results("bash")]
    assert all("error" not in text.lower() for text in bash_results), bash_results
    results = {"save": bash_results[0], "search": bash_results[1],
               "correct": bash_results[3], "forget": bash_results[4]}
    check_store_story(hub_on, model, results)  # (3)-(5): (2) Pi has no native memory
    assert Path(first_state["agent_session"]).is_file()  # Pi's own session file
    resumed = next(r for r in main if r.conversation == 4)
    # (6) Claude's first system block is a per-request billing attribution line whose
    # `cc_version` suffix is a fingerprint of the request (it differs now and then between
    # a conversation's requests); the instructions are the rest, byte for byte.
    assert without_billing(resumed.instruction_parts) == without_billing(first.instruction_parts)


# -- discovery failures and memory switched off, with the real Claude Code -------------------


def test_claude_without_memory_and_resumed_while_memory_is_off(hub_on: HubProcess,
                                                              tmp_path: Path) -> None:
    claude = npm_bin("claude")
    with MockModel(
        [Text("Hello.")],                          # A: bound while memory is on
        [Text("Hello.")],                          # B: started while memory is off
        [mcp("memory_search", {"query": "tabs"}), Text("Memory is off.")],  # A resumed
        [Text("Hello.")],                          # C: the Hub is down
    ) as model:
        env = claude_env(tmp_path, model)
        native = tmp_path / "claude" / "projects" / "-existing-project" / "memory" / "MEMORY.md"
        native.parent.mkdir(parents=True)
        native.write_text("- [user] prefers vim\n")  # the user's own Claude memory
        work = tmp_path / "work"
        amux_run(hub_on, env, work, str(claude), "--", "-p", "Hi.")
        bound = sessions(hub_on)[0]["id"]
        hub_on.call("/v1/admin/config", {"action": "set", "key": "memory.enabled",
                                         "value": "false"})
        off = amux_run(hub_on, env, work, str(claude), "--", "-p", "Hi.")
        assert "memory.enabled = false" in off.stderr
        resumed = amux_run(hub_on, env, work, "--resume", bound, "--", "-p", "Search.")
        assert "memory_disabled" in resumed.stderr  # says why its memory calls fail
        down = amux_run(hub_on, {**env, "AMUX_HUB": f"unix:{tmp_path}/no-hub.sock",
                                 "AMUX_TOKEN": "amux_" + "d" * 43}, work, str(claude), "--",
                        "-p", "Hi.")
        assert "hub_unreachable" in down.stderr
    first, started_off, again, _result, hub_down = model.main()
    assert "amux memory protocol" in first.instructions and "# Memory" not in first.instructions
    # Memory off at launch: the agent's own policy, untouched (its auto-memory section is back).
    assert "amux memory protocol" not in started_off.instructions
    assert "# Memory" in started_off.instructions
    assert "mcp__amux" not in json.dumps(started_off.body)  # neither loaded nor deferred
    # Resumed while off: the frozen protocol and suppression, and a clear error from the tool.
    assert without_billing(again.instruction_parts) == without_billing(first.instruction_parts)
    [search] = model.tool_results("memory_search")
    assert search.is_error and "memory_disabled" in search.text
    # Hub down: the agent still ran, without memory tools, protocol or a store of its own.
    assert "amux memory protocol" not in hub_down.instructions
    assert "mcp__amux" not in json.dumps(hub_down.body)
    assert native.read_text() == "- [user] prefers vim\n"  # amux never touches it
