"""Reading (never writing) the user's Codex configuration."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from amux.launcher.agent_config import codex_new_session, codex_rollouts, codex_user_instructions


def test_codex_instructions_from_config_and_profile(tmp_path: Path) -> None:
    env = {"CODEX_HOME": str(tmp_path)}
    assert codex_user_instructions([], env) is None
    config = tmp_path / "config.toml"
    config.write_text('# mine\ndeveloper_instructions = """\nUse tabs.\n"""\n')
    (tmp_path / "work.config.toml").write_text('developer_instructions = "Work rules."\n')
    before = config.read_bytes()
    assert codex_user_instructions(["exec", "hi"], env) == "Use tabs.\n"
    assert codex_user_instructions(["--profile", "work", "exec"], env) == "Work rules."
    assert codex_user_instructions(["--profile=other", "exec"], env) == "Use tabs.\n"
    assert config.read_bytes() == before
    config.write_text("developer_instructions = [broken\n")
    with pytest.raises(ValueError, match="cannot read Codex's"):
        codex_user_instructions([], env)


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

