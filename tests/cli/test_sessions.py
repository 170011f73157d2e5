"""`amux sessions list`: `created_at` stays, `started` is for people, `--pretty` a table."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

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


HEADERS = {"id", "agent", "started", "cwd", "memory", "binding", "resumable"}


@pytest.mark.parametrize(("columns", "shown"), [
    ("120", ["id", "agent", "started", "cwd", "memory binding", "resumable"]),
    ("80", ["id", "agent", "cwd", "memory binding", "resumable"]),
    ("60", ["id", "agent", "cwd", "resumable"])])
def test_sessions_pretty_fits_never_cutting_an_id_or_a_header_word(
        tmp_path: Path, columns: str, shown: list[str]) -> None:
    """At 80 columns the ids were cut (`20261202-065136…`), so none could be copied to
    resume, then the header broke into `memor/y/bindi/ng`. The id stays whole; the cwd
    loses its middle, keeping its start and end; `started` goes first when the table
    does not fit (the id starts with the same time), then the binding."""
    home = tmp_path / "amux"
    cwd = "/home/someone/projects/a-long-project-name/with/a/deep/folder"
    session = state.SessionState(
        id=state.new_session_id(1_800_000_000.0),
        agent="/work/main/fixtures/npm/node_modules/.bin/claude", adapter="claude",
        adapter_version="1.0.0", channel="mcp", binding=BINDING, principal="owner",
        protocol_version="1", protocol="p", instructions="i", suppression={},
        agent_session=None, created_at=1_800_000_000.0, cwd=cwd)
    state.save(home, session)
    done = console(home, "sessions", "list", "--pretty", env={"COLUMNS": columns})
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    assert max(len(line) for line in lines) <= int(columns)
    rule = next(i for i, line in enumerate(lines) if line.strip().startswith("─"))
    header = " ".join(lines[:rule]).split()
    assert set(header) <= HEADERS and set(header) == {w for n in shown for w in n.split()}
    [row] = [line.split() for line in lines[rule + 1:]]
    first = [session.id, "claude", *(["2027-01-15T08:00:00Z"] if "started" in shown else [])]
    assert row[:len(first)] == first
    start, _, end = row[len(first)].partition("…")
    assert cwd.startswith(start) and cwd.endswith(end) and len(start + end) >= 12


def test_sessions_pretty_without_sessions_says_how_to_start_one(tmp_path: Path) -> None:
    done = console(tmp_path / "amux", "sessions", "list", "--pretty")
    assert done.returncode == 0 and "`amux run AGENT` starts one" in done.stdout


DROP = object()
SPOILED: dict[str, bytes | dict[str, object]] = {
    "an array": b"[1]",
    "not JSON": b"{",
    "not UTF-8": b'{"version": 1, "id": "\xff"}',
    "nested too deeply": b'{"a":' * 5000,
    "an unknown key": {"colour": "red"},
    "a required key missing": {"cwd": DROP},
    "a string for a number": {"created_at": "today"},
    "a boolean for a number": {"created_at": True},
    "no date": {"created_at": 1e300},
    "an object for a string": {"cwd": {}},
    "a number among the warnings": {"warnings": ["w", 1]},
    "an endpoint without its url": {"endpoint": {"model": "m"}},
    "another session's id": {"id": "20000101-000000-000000"},
}
"""What a state.json may hold that `state.save` never writes (a whole text, or changes to
a saved one): each is refused by name, never a crash (`[1]` was an AttributeError, an
unknown key a TypeError)."""


def spoiled(home: Path, how: str) -> tuple[str, Path]:
    """A saved session whose state.json is then spoiled `how`: its id and that file."""
    session = saved(home, 1_800_000_000.0, BINDING, True)
    path = home / "sessions" / session / "state.json"
    spoil = SPOILED[how]
    if isinstance(spoil, dict):
        data = {**json.loads(path.read_text()), **spoil}
        spoil = json.dumps({k: v for k, v in data.items() if v is not DROP}).encode()
    path.write_bytes(spoil)
    return session, path


@pytest.mark.parametrize("how", sorted(SPOILED))
def test_a_spoiled_state_is_invalid_argument_naming_the_file_and_the_fix(
        tmp_path: Path, how: str) -> None:
    home = tmp_path / "amux"
    session, path = spoiled(home, how)
    done = console(home, "sessions", "show", session)
    assert done.returncode == 2, done.stderr
    assert json.loads(done.stdout)["error"]["code"] == "invalid_argument"
    [line] = done.stderr.splitlines()
    assert line.startswith(f"amux sessions: invalid_argument: {path} ")
    assert line.endswith(f"start a new session instead, and remove this one: rm -r {path.parent}")


def test_sessions_list_skips_and_names_a_session_it_cannot_read(tmp_path: Path) -> None:
    home = tmp_path / "amux"
    bad, path = spoiled(home, "an array")
    good = saved(home, 1_800_000_060.0, BINDING, True)
    (home / "sessions" / "starting").mkdir()  # no state.json yet: no session, no warning
    done = console(home, "sessions", "list")
    assert done.returncode == 0, done.stderr
    assert [entry["id"] for entry in json.loads(done.stdout)["sessions"]] == [good]
    assert done.stderr.splitlines() == [
        f"amux sessions: warning: skipped session {bad}: {path} is not a session state amux "
        f"can read (not a JSON object), so it cannot be resumed: start a new session instead, "
        f"and remove this one: rm -r {path.parent}"]


def test_prune_removes_old_and_unresumable_sessions_and_says_why(tmp_path: Path) -> None:
    import time

    home = tmp_path / "amux"
    now = time.time()
    old = saved(home, now - 40 * 86400, BINDING, True)
    failed = saved(home, now - 60, BINDING, False)
    fresh = saved(home, now - 30, BINDING, True)
    refused = console(home, "sessions", "prune")
    assert refused.returncode == 2 and "--older-than DAYS, --unresumable" in refused.stderr
    dry = console(home, "sessions", "prune", "--older-than", "30", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    answer = json.loads(dry.stdout)
    assert [entry["id"] for entry in answer["pruned"]] == [old] and answer["dry_run"] is True
    assert answer["pruned"][0]["why"] == "started more than 30 days ago"
    assert (home / "sessions" / old).is_dir()
    done = console(home, "sessions", "prune", "--older-than", "30", "--unresumable")
    assert done.returncode == 0, done.stderr
    assert {entry["id"] for entry in json.loads(done.stdout)["pruned"]} == {old, failed}
    listed = json.loads(console(home, "sessions", "list").stdout)["sessions"]
    assert [entry["id"] for entry in listed] == [fresh]


def test_prune_keeps_a_session_whose_launcher_still_runs(tmp_path: Path) -> None:
    import os

    from amux import pidfile

    home = tmp_path / "amux"
    running = saved(home, 1_000_000_000.0, BINDING, False)
    run_dir = home / "run" / "agents" / running
    run_dir.mkdir(parents=True)
    for directory in (home / "run", home / "run" / "agents"):
        os.chmod(directory, 0o700)
    (run_dir / "launcher.pid").write_text(pidfile.current().render())  # this process
    done = console(home, "sessions", "prune", "--older-than", "1", "--unresumable")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["pruned"] == []
    (run_dir / "launcher.pid").unlink()  # its launcher gone: pruned
    done = console(home, "sessions", "prune", "--unresumable")
    assert [entry["id"] for entry in json.loads(done.stdout)["pruned"]] == [running]
