"""Learning the thread a Codex run created from its rollouts (read, never written)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from amux.launcher.agent_config import codex_new_session, codex_rollouts


def test_the_new_rollout_names_the_thread(tmp_path: Path) -> None:
    env = {"CODEX_HOME": str(tmp_path)}
    day = tmp_path / "sessions" / "2026" / "11" / "30"
    day.mkdir(parents=True)
    old = day / "rollout-2026-11-30T05-00-00-old.jsonl"
    old.write_text(json.dumps({"type": "session_meta", "payload": {"id": "old"}}) + "\n")
    before = codex_rollouts(env)
    assert codex_new_session(before, env) is None
    new = day / "rollout-2026-11-30T05-01-00-new.jsonl"
    new.write_text(json.dumps({"type": "session_meta", "payload": {"id": "thread-7"}}) + "\n")
    assert codex_new_session(before, env) == "thread-7"



@pytest.mark.parametrize("stream", ["stdout", "stderr"])
def test_an_agents_version_is_cached_whichever_stream_prints_it(
        tmp_path: Path, stream: str) -> None:
    """Pi prints `--version` on stderr when stdin is no terminal; it was never cached, so
    every launch paid ~0.9 s for it again."""
    from amux.adapters import ADAPTERS
    from amux.launcher.run import _version

    calls = tmp_path / "calls"
    agent = tmp_path / "pi"
    redirect = ">&2" if stream == "stderr" else ""
    agent.write_text(f"#!/bin/sh\necho call >> {calls}\necho 0.73.1 {redirect}\n")
    agent.chmod(0o755)
    home = tmp_path / "home"
    assert _version(home, ADAPTERS["pi"], str(agent)) == "0.73.1"
    assert _version(home, ADAPTERS["pi"], str(agent)) == "0.73.1"
    assert calls.read_text() == "call\n"  # asked once, then remembered
