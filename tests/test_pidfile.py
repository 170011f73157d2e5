"""Start times read from /proc are psutil's, so records written either way agree, and a
zombie, a dead pid or a reused one is never taken for the recorded process."""

from __future__ import annotations

import os
import subprocess

import psutil
import pytest

from amux import pidfile
from tests.wait import wait_until


def test_the_proc_reading_is_psutils_create_time() -> None:
    child = subprocess.Popen(["sleep", "30"])
    try:
        for pid in (os.getpid(), child.pid, 1):
            assert pidfile._started(pid) == pytest.approx(psutil.Process(pid).create_time(),
                                                          abs=0.01)
            assert pidfile._psutil_started(pid) == psutil.Process(pid).create_time()
        assert pidfile.current().started == pytest.approx(psutil.Process().create_time(),
                                                          abs=0.01)
    finally:
        child.kill()
        child.wait()


def test_zombies_and_dead_pids_have_no_start_time() -> None:
    child = subprocess.Popen(["true"])
    try:
        wait_until(lambda: psutil.Process(child.pid).status() == psutil.STATUS_ZOMBIE, 10,
                   "the exited child to be a zombie")
        assert pidfile._started(child.pid) is None
        assert pidfile._psutil_started(child.pid) is None
    finally:
        child.wait()
    assert pidfile._started(child.pid) is None  # reaped: gone
    assert pidfile.identify(999_999_999) is None


def test_a_record_is_alive_only_with_its_own_start_time() -> None:
    me = pidfile.current()
    assert pidfile.alive(me) and pidfile.alive(pidfile.ProcessId(me.pid, None))
    assert me.started is not None
    assert not pidfile.alive(pidfile.ProcessId(me.pid, me.started - 1000))  # a reused pid
    parsed = pidfile.parse(me.render())
    assert parsed is not None and parsed.pid == me.pid
    assert parsed.started == pytest.approx(me.started, abs=0.001)


def test_without_proc_psutil_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pidfile, "_boot_time", lambda: None)
    me = pidfile.current()
    assert me.started == psutil.Process().create_time() and pidfile.alive(me)
