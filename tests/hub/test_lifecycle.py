"""Starting and stopping a real Hub when things are not as they should be.

A full disk still serves reads (the pid file is best effort); a read-only home, a
symlink or FIFO planted at the root lock's name each end start-up with one line
and no traceback; a Hub started on demand by a process that stays alive is not
that process's child, so `amux hub stop` sees it gone as soon as it exited; an
`amux/` package in the starter's working directory is never imported.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from tests.hostile import fill, remount, small_tmpfs
from tests.hubproc import Caller, HubProcess, amux
from tests.wait import gone, wait_until


@pytest.fixture
def mount() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="amux-", dir="/tmp") as directory, \
            small_tmpfs(Path(directory) / "m", size="4m") as mounted:
        yield mounted


def serve(home: Path) -> subprocess.CompletedProcess[str]:
    """`python -m amux.hub.server HOME` expected to end at start-up."""
    return subprocess.run([sys.executable, "-m", "amux.hub.server", str(home)],
                          capture_output=True, text=True, timeout=60)


def one_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("amux hub: "), stderr
    return lines[0]


def prepared(home: Path) -> None:
    """A home that has served once: memory on, `a.md` stored."""
    hub = HubProcess(home)
    try:
        hub.call("/v1/admin/config", {"action": "set", "key": "memory.enabled", "value": "true"})
        assert hub.call("/v1/memory/upsert", {"path": "a.md", "content": "kept\n",
                                              "expected_revision": "absent"})[0] == 200
    finally:
        assert hub.stop() == 0


def test_a_hub_on_a_full_disk_serves_reads_and_refuses_writes(mount: Path) -> None:
    home = mount / "home"
    prepared(home)
    fill(mount)
    hub = HubProcess(home)  # python -m amux.hub.server HOME
    try:
        assert hub.call("/v1/memory/get", {"path": "a.md"})[1]["content"] == "kept\n"
        assert not (home / "run" / "hub.pid").exists()  # best effort: no space for it
        status, body = hub.call("/v1/memory/upsert", {"path": "b.md", "content": "x\n",
                                                      "expected_revision": "absent"})
        assert (status, body["error"]["errno"]) == (507, "ENOSPC")
    finally:
        assert hub.stop() == 0
    code, started, err = amux(home, "hub", "start")
    try:
        assert code == 0 and started["running"] is True, err
        assert amux(home, "memory", "show", "a.md")[1]["content"] == "kept\n"
        code, out, _ = amux(home, "memory", "upsert", "b.md", "--expected-revision", "absent",
                            stdin="x\n")
        assert (code, out["error"]["code"], out["error"]["errno"]) == (
            8, "storage_unavailable", "ENOSPC")
    finally:
        assert amux(home, "hub", "stop")[0] == 0


def test_a_read_only_home_is_refused_with_one_line(mount: Path) -> None:
    home = mount / "home"
    prepared(home)
    remount(mount, read_only=True)
    done = serve(home)
    assert done.returncode == 8
    assert "EROFS" in one_line(done.stderr) and "read-only" in done.stderr
    code, out, err = amux(home, "hub", "start")
    assert (code, out["error"]["code"], out["error"]["errno"]) == (
        8, "storage_unavailable", "EROFS")
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


@pytest.mark.parametrize("plant", ["symlink", "fifo"])
def test_something_planted_at_the_root_lock_is_refused_with_one_line(
        short_home: Path, tmp_path: Path, plant: str) -> None:
    lock = short_home / "memory" / ".amux-root.lock"
    lock.parent.mkdir(parents=True)
    if plant == "symlink":
        lock.symlink_to(tmp_path / "elsewhere")
    else:
        os.mkfifo(lock)
    done = serve(short_home)
    assert done.returncode == 1
    line = one_line(done.stderr)
    assert ("a symbolic link" if plant == "symlink" else "a FIFO") in line
    assert "remove it" in line
    assert not (tmp_path / "elsewhere").exists()


STARTER = """
import sys
from pathlib import Path
from amux.hub import control
print(control.start(Path(sys.argv[1]))["pid"], flush=True)
sys.stdin.read()  # stays alive, as `amux run` does while its agent runs
"""


def test_stop_succeeds_while_the_on_demand_starter_is_still_alive(short_home: Path) -> None:
    starter = subprocess.Popen([sys.executable, "-c", STARTER, str(short_home)],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert starter.stdout is not None
        pid = int(starter.stdout.readline())
        hub = psutil.Process(pid)
        assert hub.ppid() != starter.pid
        assert os.getsid(pid) not in (os.getsid(starter.pid), os.getsid(0))
        began = time.monotonic()
        code, stopped, err = amux(short_home, "hub", "stop")
        assert (code, stopped["stopped"], stopped["pid"]) == (0, True, pid), err
        assert time.monotonic() - began < 5
        assert gone(pid)
        assert amux(short_home, "hub", "status")[1]["running"] is False
    finally:
        assert starter.stdin is not None and starter.stdout is not None
        starter.stdin.close()
        starter.wait(timeout=30)
        starter.stdout.close()


def test_stop_finds_a_hub_that_no_longer_answers_by_its_pid_file(short_home: Path) -> None:
    code, started, _ = amux(short_home, "hub", "start")
    assert code == 0
    pid = started["pid"]
    recorded, start_time = (short_home / "run" / "hub.pid").read_text().split()
    assert int(recorded) == pid
    assert abs(float(start_time) - psutil.Process(pid).create_time()) < 1
    (short_home / "run" / "hub.sock").unlink()  # it still runs, but answers nobody
    code, stopped, err = amux(short_home, "hub", "stop")
    assert (code, stopped.get("pid")) == (0, pid), err
    assert gone(pid)


def test_a_hub_that_does_not_stop_is_killed_not_left_half_running(
        short_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from amux.hub import control

    pid = control.start(short_home)["pid"]
    os.kill(pid, signal.SIGSTOP)  # deaf to SIGTERM, as a wedged Hub would be
    monkeypatch.setattr(control, "STOP_SECONDS", 0.5)
    assert control.stop(short_home) == {"running": False, "stopped": True, "pid": pid,
                                        "killed": True}
    assert gone(pid)


def test_a_start_up_error_reaches_the_starter_with_its_code(short_home: Path) -> None:
    first = HubProcess(short_home)
    try:
        (short_home / "run" / "hub.sock").unlink()  # it holds the root, but answers nobody
        code, out, err = amux(short_home, "hub", "start")
        assert (code, out["error"]["code"]) == (1, "internal")
        assert "already in use" in out["error"]["message"], err
    finally:
        first.stop()


PLANTED = """\
import os, pathlib
pathlib.Path(os.environ["PLANTED_MARK"]).write_text(str(os.getpid()))
raise SystemExit("planted")
"""


def test_a_package_planted_in_the_starters_directory_never_runs(short_home: Path) -> None:
    """`amux hub start` (or `amux run`, which starts the Hub on demand) in a cloned
    repository or /tmp: an `amux/` there is not what the Hub, or its search process,
    imports."""
    workdir = short_home.parent / "repo"
    (workdir / "amux" / "hub").mkdir(parents=True)
    mark = short_home.parent / "ran"
    for module in ("amux/__init__.py", "amux/hub/__init__.py", "amux/hub/server.py",
                   "amux/hub/searcher.py", "amux/__main__.py"):
        (workdir / module).write_text(PLANTED)
    installed = str(Path(sys.executable).parent / "amux")
    env = {**os.environ, "AMUX_HOME": str(short_home), "PLANTED_MARK": str(mark)}
    run = functools.partial(subprocess.run, cwd=workdir, env=env, capture_output=True,
                            text=True, timeout=60)
    started = run([installed, "hub", "start"])
    assert started.returncode == 0, started.stderr
    pid = json.loads(started.stdout)["pid"]
    try:
        owner = json.loads((short_home / "credentials" / "owner.json").read_text())
        hub = Caller(str(short_home / "run" / "hub.sock"), owner["token"])
        hub.call("/v1/admin/config", {"action": "set", "key": "memory.enabled",
                                      "value": "true"})
        assert hub.call("/v1/memory/upsert", {"path": "a.md", "content": "kept\n",
                                              "expected_revision": "absent"})[0] == 200
        assert hub.call("/v1/memory/search", {"query": "kept"})[0] == 200  # starts it
        # set once the search process imported what it imports and said it is ready
        searching = wait_until(lambda: hub.call("/v1/status", {})[1]["search_process_pid"],
                               20, "a search process to become ready")
        assert psutil.Process(searching).ppid() == pid
        status, found = hub.call("/v1/memory/search", {"query": "kept"})
        assert (status, [r["path"] for r in found["results"]]) == (200, ["a.md"])
        hub.close()
    finally:
        assert run([installed, "hub", "stop"]).returncode == 0
    assert not mark.exists()


SOURCE = Path(__file__).resolve().parents[2] / "amux"
"""amux's own code, copied as an install the test then removes."""
UNINSTALLED_HUB = ("import sys; import amux.hub.server as server; "
                   "server.INSTALL_CHECK_SECONDS = 0.2; sys.exit(server.main(sys.argv[1:]))")
"""The Hub, looking for its own code five times a second instead of every 30 s."""


def test_a_hub_whose_amux_was_uninstalled_stops(short_home: Path, tmp_path: Path) -> None:
    """Issue 37: after `pipx uninstall amux` nothing of amux keeps running: the Hub finds
    its code gone from disk and stops cleanly (socket and pid file removed)."""
    install = tmp_path / "site"
    shutil.copytree(SOURCE, install / "amux",
                    ignore=shutil.ignore_patterns("__pycache__"))
    hub = subprocess.Popen([sys.executable, "-c", UNINSTALLED_HUB, str(short_home)],
                           env={**os.environ, "PYTHONPATH": str(install)},
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           cwd=tmp_path)
    try:
        assert hub.stdout is not None
        status = json.loads(hub.stdout.readline())
        assert status["running"] is True
        shutil.rmtree(install / "amux")  # what an uninstall does to the Hub's code
        _, err = hub.communicate(timeout=20)
    finally:
        if hub.poll() is None:
            hub.kill()
            hub.communicate(timeout=20)
    assert hub.returncode == 0, err
    assert f"amux was uninstalled ({install / 'amux' / '__init__.py'} is gone)" in err
    assert not (short_home / "run" / "hub.sock").exists()
    assert not (short_home / "run" / "hub.pid").exists()
