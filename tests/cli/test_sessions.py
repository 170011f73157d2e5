"""`amux sessions list`: `created_at` stays, `started` is for people, `--pretty` a table."""

from __future__ import annotations

import json
from pathlib import Path

from amux.launcher import state
from tests.cli.script import console

BINDING = "principal:" + "ab" * 32


def saved(home: Path, created_at: float, binding: str | None, resumable: bool) -> str:
    session = state.SessionState(
        id=state.new_session_id(created_at), agent="claude", adapter="claude",
        adapter_version="1.0.0", channel="mcp", binding=binding, principal="owner",
        protocol_version="1", protocol="p", instructions="i", suppression={},
        agent_session=None, created_at=created_at, cwd="/work/repo", resumable=resumable)
    state.save(home, session)
    return session.id


def test_sessions_list_keeps_created_at_and_adds_started(tmp_path: Path) -> None:
    home = tmp_path / "amux"
    first = saved(home, 1_800_000_000.25, BINDING, True)
    done = console(home, "sessions", "list")
    assert done.returncode == 0, done.stderr
    [entry] = json.loads(done.stdout)["sessions"]
    assert (entry["id"], entry["created_at"]) == (first, 1_800_000_000.25)
    assert entry["started"] == "2027-01-15T08:00:00Z"
    shown = json.loads(console(home, "sessions", "show", first).stdout)
    assert shown["started"] == entry["started"] and shown["protocol"] == "p"


def test_sessions_pretty_is_a_table_before_or_after_the_command(tmp_path: Path) -> None:
    home = tmp_path / "amux"
    with_memory = saved(home, 1_800_000_000.0, BINDING, True)
    without = saved(home, 1_800_000_060.0, None, False)
    wide = {"COLUMNS": "160"}
    for args in (("sessions", "list", "--pretty"), ("sessions", "--pretty", "list"),
                 ("--pretty", "sessions", "list")):
        done = console(home, *args, env=wide)
        assert done.returncode == 0, done.stderr
        header, _rule, *rows = [line.split() for line in done.stdout.splitlines()
                                if line.strip()]
        assert header == ["id", "agent", "started", "cwd", "memory", "binding", "resumable"]
        assert rows == [
            [with_memory, "claude", "2027-01-15T08:00:00Z", "/work/repo",
             "principal:abababababab…", "yes"],
            [without, "claude", "2027-01-15T08:01:00Z", "/work/repo", "none", "no"]]


def test_sessions_pretty_without_sessions_says_how_to_start_one(tmp_path: Path) -> None:
    done = console(tmp_path / "amux", "sessions", "list", "--pretty")
    assert done.returncode == 0 and "`amux run AGENT` starts one" in done.stdout
