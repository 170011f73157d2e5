"""Watching a new session's first run for the session files the agent writes
(amux/launcher/session_watch.py): the files it held open, the ones that are new, their first
lines, handed to the adapter's pick; never the files that were there before."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from amux.adapters.base import FinishedRun, SessionFiles
from amux.launcher.session_watch import SessionWatch, _proc_fds, _proc_tree, _psutil_files
from tests.wait import wait_until

HOLDER = """import sys, time
with open(sys.argv[1], "w") as held:
    held.write(sys.argv[2] + "\\n")
    held.flush()
    time.sleep(float(sys.argv[3]))
"""
"""Writes a session file, holds it open for a while, then exits (as Codex holds its rollout)."""


class Seen:
    """A pick that keeps what it was shown."""

    def __init__(self) -> None:
        self.run: FinishedRun | None = None

    def __call__(self, run: FinishedRun) -> tuple[str | None, str | None]:
        self.run = run
        return "picked", None


def watched_run(sessions: Path, *children: tuple[str, float]) -> FinishedRun:
    """Start a shell whose children each write and hold one session file; watch it."""
    seen = Seen()
    watch = SessionWatch(SessionFiles(str(sessions), "rollout-*.jsonl", seen))
    script = " & ".join(f"{sys.executable} -c '{HOLDER}' {sessions}/{name} first-{name} {hold}"
                        for name, hold in children) + " & wait"
    agent = subprocess.Popen(["sh", "-c", script])
    watch.start(agent.pid)
    assert agent.wait(30) == 0
    assert watch.finish(["agent", "--flag"], "/work") == ("picked", None)
    assert seen.run is not None
    return seen.run


def test_the_watch_shows_new_files_and_which_the_agents_tree_held(tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    (sessions / "2026" / "12").mkdir(parents=True)
    old = sessions / "2026" / "12" / "rollout-old.jsonl"
    old.write_text("old\n")
    before = time.time()
    run = watched_run(sessions, ("2026/12/rollout-held.jsonl", 1.0),
                      ("rollout-brief.jsonl", 0.0), ("other.txt", 1.0))
    by_name = {Path(f.path).name: f for f in run.files}
    assert set(by_name) == {"rollout-held.jsonl", "rollout-brief.jsonl"}  # not old, not other
    assert by_name["rollout-held.jsonl"].held is True  # held by a grandchild, for 1 s
    assert by_name["rollout-held.jsonl"].first_line == "first-2026/12/rollout-held.jsonl\n"
    assert run.watched is True and run.argv == ("agent", "--flag") and run.cwd == "/work"
    assert before <= run.started_at <= run.ended_at <= time.time()


def test_a_file_written_behind_the_agents_back_is_new_but_not_held(tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    seen = Seen()
    watch = SessionWatch(SessionFiles(str(sessions), "rollout-*.jsonl", seen))
    agent = subprocess.Popen(["sleep", "0.5"])
    watch.start(agent.pid)
    (sessions / "rollout-theirs.jsonl").write_text(json.dumps({"type": "session_meta"}) + "\n")
    agent.wait(30)
    watch.finish(["agent"], "/work")
    assert seen.run is not None
    [theirs] = seen.run.files
    assert theirs.held is False and theirs.first_line.startswith('{"type"')


def test_files_that_say_it_all_are_listed_without_polling_the_tree(tmp_path: Path) -> None:
    """OpenCode's plugin writes the id: no poll of the agent's tree (`held=False`), the new
    file is still handed over, not held, and the run is marked not watched."""
    seen = Seen()
    watch = SessionWatch(SessionFiles(str(tmp_path), "opencode-session", seen, held=False))
    agent = subprocess.Popen(["sh", "-c", f"printf ses_x > {tmp_path}/opencode-session"])
    watch.start(agent.pid)
    assert watch._thread is None
    agent.wait(30)
    assert watch.finish(["opencode"], "/work") == ("picked", None)
    assert seen.run is not None and seen.run.watched is False
    [written] = seen.run.files
    assert written.first_line == "ses_x" and written.held is False


def test_an_agent_that_never_started_is_not_picked_for(tmp_path: Path) -> None:
    seen = Seen()
    watch = SessionWatch(SessionFiles(str(tmp_path), "rollout-*.jsonl", seen))
    assert watch.finish(["agent"], "/work") == (None, None) and seen.run is None


def test_proc_and_psutil_see_the_same_open_files(tmp_path: Path) -> None:
    target = tmp_path / "held.txt"
    agent = subprocess.Popen(["sh", "-c", f"{sys.executable} -c '{HOLDER}' {target} x 2 & wait"])
    try:
        wait_until(lambda: len(tree := _proc_tree(agent.pid)) == 2
                   and str(target) in (_proc_fds(tree) or ()), 10,
                   "the shell's child to hold the session file open")
        by_proc = _proc_fds(_proc_tree(agent.pid))
        by_psutil = _psutil_files(agent.pid)
        assert by_proc is not None and by_psutil is not None
        assert str(target) in by_proc and str(target) in by_psutil
        assert len(_proc_tree(agent.pid)) == 2  # the shell and its child
    finally:
        agent.wait(30)
    assert _proc_fds(_proc_tree(agent.pid)) == set()  # gone: nothing held, not unreadable


@pytest.mark.parametrize("stream", ["stdout", "stderr"])
def test_an_agents_version_is_cached_whichever_stream_prints_it(
        tmp_path: Path, stream: str) -> None:
    """Pi prints `--version` on stderr when stdin is no terminal; it was never cached, so
    every launch paid ~0.9 s for it again."""
    from amux.adapters import ADAPTERS
    from amux.launcher.versions import cached_version

    calls = tmp_path / "calls"
    agent = tmp_path / "pi"
    redirect = ">&2" if stream == "stderr" else ""
    agent.write_text(f"#!/bin/sh\necho call >> {calls}\necho 0.73.1 {redirect}\n")
    agent.chmod(0o755)
    home = tmp_path / "home"
    assert cached_version(home, ADAPTERS["pi"], str(agent)) == "0.73.1"
    assert cached_version(home, ADAPTERS["pi"], str(agent)) == "0.73.1"
    assert calls.read_text() == "call\n"  # asked once, then remembered
