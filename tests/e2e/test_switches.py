"""The switches with the real Claude Code against a scripted model, memory on at the Hub:
`amux run --no-memory` and the setting `agents.claude.memory = false` each launch Claude as if
memory were off (no protocol, no amux tools, its own auto-memory section back); a session
started with `claude` itself is refused by `amux run --resume`, which names `claude --resume
ID`, and that command does resume it."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from tests.e2e.story import amux_run, bounded
from tests.hubproc import HubProcess
from tests.mockmodel import MockModel, Text
from tests.mockmodel.agents import claude_env
from tests.peers import npm_bin

pytestmark = pytest.mark.timeout(300)


def test_claude_without_amux_memory_by_option_and_by_setting(memory_hub: HubProcess,
                                                              tmp_path: Path) -> None:
    claude = npm_bin("claude")
    with MockModel([Text("Hello.")]) as model:
        env = claude_env(tmp_path, model)
        work = tmp_path / "work"
        with_memory = amux_run(memory_hub, env, work, str(claude), "--", "-p", "Hi.")
        once = amux_run(memory_hub, env, work, "--no-memory", str(claude), "--", "-p", "Hi.")
        done = subprocess.run([sys.executable, "-m", "amux", "settings", "set",
                               "agents.claude.memory", "false"], env=env, capture_output=True,
                              text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        by_setting = amux_run(memory_hub, env, work, str(claude), "--", "-p", "Hi.")
    assert "warning" not in with_memory.stderr + once.stderr + by_setting.stderr
    bound, *unbound = model.main()
    assert "amux memory protocol" in bound.instructions and "# Memory" not in bound.instructions
    assert len(unbound) == 2
    for request in unbound:  # Claude's own policy: its auto-memory section, no amux tools
        assert "amux memory protocol" not in request.instructions
        assert "# Memory" in request.instructions
        assert "mcp__amux" not in json.dumps(request.body)


def test_a_session_started_with_claude_itself_is_resumed_with_the_command_amux_names(
        memory_hub: HubProcess, tmp_path: Path) -> None:
    claude = npm_bin("claude")
    own = str(uuid.uuid4())
    with MockModel([Text("Hello.")], [Text("Still here.")]) as model:
        env = claude_env(tmp_path, model)
        work = tmp_path / "work"
        started = bounded([str(claude), "--session-id", own, "-p", "Hi."], env, work)
        assert started.returncode == 0, started.stderr
        refused = bounded([sys.executable, "-m", "amux", "run", "--resume", own],
                          {**env, "AMUX_HOME": str(memory_hub.home)}, work)
        assert refused.returncode == 2
        said = refused.stderr.strip().rpartition(": ")[2]
        assert said == f"`claude --resume {own}`", refused.stderr
        named = said.strip("`").split()
        resumed = bounded([str(claude), *named[1:], "-p", "Again."], env, work)
        assert resumed.returncode == 0, resumed.stderr
    first, again = model.main()
    assert "Hi." in json.dumps(again.body) and "Hello." in json.dumps(again.body)
    assert "amux memory protocol" not in first.instructions + again.instructions
