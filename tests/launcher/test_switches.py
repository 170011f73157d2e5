"""The design's own switches at their edges, through `amux run` with a real Hub and scripted
agents: one launch without memory (`--no-memory`), one agent kept out of memory by a setting
(`agents.NAME.memory = false`), each leaving the agent's own memory policy as if memory
were off; a resume of a session started outside amux, named with the agent's own command."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.hubproc import HubProcess
from tests.launcher.fakeagents import Launcher

pytestmark = pytest.mark.timeout(180)

MEMORY_ARGS = ("--mcp-config", "--allowedTools", "--strict-mcp-config")


@pytest.fixture
def launcher(memory_hub: HubProcess, tmp_path: Path) -> Launcher:
    return Launcher(memory_hub.home, tmp_path)


def state_of(session: Path) -> dict[str, object]:
    loaded: dict[str, object] = json.loads((session / "state.json").read_text())
    return loaded


def settings(*args: str) -> subprocess.CompletedProcess[str]:
    """`amux settings ARGS` as the user runs it (this test's own HOME)."""
    return subprocess.run([sys.executable, "-m", "amux", "settings", *args],
                          capture_output=True, text=True, timeout=60)


def without_memory(record: dict[str, object]) -> None:
    """Claude as it runs with memory off: no protocol, no memory tools, nothing suppressed."""
    argv = record["argv"]
    assert isinstance(argv, list) and isinstance(record["env"], dict)
    assert not [arg for arg in argv if arg.startswith(("--append-system-prompt", *MEMORY_ARGS))]
    assert "CLAUDE_CODE_DISABLE_AUTO_MEMORY" not in record["env"]
    assert "AMUX_MEMORY_CONFIG" not in record["env"]


def test_no_memory_launches_one_session_as_if_memory_were_off(launcher: Launcher) -> None:
    """Memory is on, and this one launch has none: no protocol, no tools, no suppression of
    Claude's own auto-memory, no connection to memory, no warning; it stays so on resume;
    the next plain
    launch has memory again."""
    done = launcher.run("--no-memory", "claude", "--", "-p", "one")
    assert done.returncode == 0, done.stderr
    assert "warning" not in done.stderr
    without_memory(launcher.records()[0])
    [session] = launcher.sessions()
    state = state_of(session)
    assert (state["binding"], state["protocol"], state["suppression"]) == (None, None, {})
    assert state["no_memory_reason"] == "--no-memory"
    again = launcher.run("--resume", session.name, "--", "-p", "two")
    assert again.returncode == 0, again.stderr
    without_memory(launcher.records()[1])
    assert launcher.run("claude", "--", "-p", "three").returncode == 0
    assert launcher.records()[2]["env"]["CLAUDE_CODE_DISABLE_AUTO_MEMORY"] == "1"


def test_no_memory_cannot_take_a_bound_sessions_memory_away(launcher: Launcher) -> None:
    """A session bound earlier keeps its frozen protocol and suppression on resume."""
    assert launcher.run("claude", "--", "-p", "one").returncode == 0
    [session] = launcher.sessions()
    refused = launcher.run("--no-memory", "--resume", session.name)
    assert refused.returncode == 2
    assert refused.stderr == (
        f"amux run: invalid_argument: session {session.name} started with memory, and a "
        "resume keeps its frozen protocol and suppression; --no-memory is for a new session "
        "(`amux run --no-memory claude -- …`)\n")


def test_a_setting_keeps_one_agent_out_of_memory(launcher: Launcher) -> None:
    """`amux settings set agents.claude.memory false`: every new Claude session runs as
    with memory off, and says where that came from; Pi keeps its memory."""
    done = settings("set", "agents.claude.memory", "false")
    assert (done.returncode, json.loads(done.stdout)) == (
        0, {"key": "agents.claude.memory", "value": False})
    path = Path(os.environ["HOME"]) / ".config" / "amux" / "settings.toml"
    dry = launcher.run("--dry-run", "claude")
    assert dry.returncode == 0, dry.stderr
    plan = json.loads(dry.stdout)
    assert plan["binding"] is None and plan["env"] == {}
    assert plan["no_memory_reason"] == f"agents.claude.memory = false in {path}"
    assert plan["defaults"] == {"memory": f"agents.claude.memory in {path}"}
    assert launcher.run("claude", "--", "-p", "x").returncode == 0
    without_memory(launcher.records()[0])
    pi = json.loads(launcher.run("--dry-run", "pi").stdout)
    assert pi["binding"] == "global" and pi["no_memory_reason"] is None


def test_a_session_started_outside_amux_is_named_with_the_agents_own_resume(
        launcher: Launcher) -> None:
    """`amux run --resume <Claude's own session id>` pointed at an amux session that does
    not exist: it says to resume it with Claude itself, naming the command; with AGENT, that
    agent's; an id nobody keeps, every agent's."""
    own = "5b0c7a52-9f4e-4e1a-8d0e-1f6a2b3c4d5e"
    kept = Path(os.environ["HOME"]) / ".claude" / "projects" / "-work-repo" / f"{own}.jsonl"
    kept.parent.mkdir(parents=True)
    kept.write_text("{}\n")
    said = (f"amux run: invalid_argument: no amux session {own!r}: `amux run --resume` takes "
            "the id of a session amux started (`amux sessions list`; `last`: the newest here). "
            "A session started outside amux has no instructions or memory wiring amux froze, "
            "so amux cannot resume it: resume it with ")
    found = launcher.run("--resume", own)
    assert (found.returncode, found.stderr) == (
        2, f"{said}Claude Code itself, without amux memory: `claude --resume {own}`\n")
    named = launcher.run("--resume", own, "codex")
    assert named.stderr == f"{said}Codex itself, without amux memory: `codex resume {own}`\n"
    nobodys = launcher.run("--resume", "ses_0123")
    assert "resume it with the agent that started it" in nobodys.stderr
    assert ("`claude --resume ses_0123` or `cline --id ses_0123` or `codex resume ses_0123` or"
            in nobodys.stderr)
    assert not launcher.log.exists()  # no agent started


def test_the_agents_own_id_of_an_amux_session_resumes_that_session(launcher: Launcher) -> None:
    assert launcher.run("claude", "--", "-p", "one").returncode == 0
    [session] = launcher.sessions()
    own = state_of(session)["agent_session"]
    assert isinstance(own, str)
    done = launcher.run("--resume", own, "--", "-p", "two")
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines()[0] == (
        f"amux run: {own} is claude's own id of amux session {session.name}: resuming that")
    assert launcher.records()[1]["argv"][:2] == ["--resume", own]


def test_settings_are_refused_naming_the_file_and_the_fix(launcher: Launcher) -> None:
    path = Path(os.environ["HOME"]) / ".config" / "amux" / "settings.toml"
    path.parent.mkdir(parents=True)
    path.write_text("[agents.claude]\nmemroy = false\n")
    done = launcher.run("--dry-run", "claude")
    assert (done.returncode, done.stderr) == (
        2, f"amux run: invalid_argument: {path}: agents.claude.memroy: unknown key; did you "
        "mean 'memory'? (keys: memory, endpoint, model, endpoint-api, endpoint-key-env)\n")
    path.write_text("[agents.cluade]\nmemory = false\n")
    assert "[agents.cluade]: no such agent; did you mean 'claude'?" in launcher.run(
        "--dry-run", "claude").stderr
