"""The Hub binds sockets only in directories it created or verified (`amux.sockdir`).

Real Hub processes, and a real second Unix user as the attacker who prepares a
directory before the Hub starts. The fallback socket directory lives under a
private TMPDIR made like /tmp (sticky, world-writable), never the real /tmp.
"""

from __future__ import annotations

import os
import pwd
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest

from amux.hub.paths import owner_socket_path
from tests.hostile import as_user, require_root, throwaway_user
from tests.hubproc import HubProcess


@pytest.fixture
def long_home(tmp_path: Path, temp_root: Path) -> Path:
    """An AMUX_HOME too long for `<home>/run/hub.sock`: the socket falls back under TMPDIR."""
    home = tmp_path / ("h" * 100) / "home"
    assert owner_socket_path(home).parent == temp_root / f"amux-{os.geteuid()}"
    return home


def start_refused(home: Path) -> str:
    """Start a Hub that must refuse to: its one line of stderr (fails if it serves)."""
    process = subprocess.Popen([sys.executable, "-m", "amux.hub.server", str(home)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        ready = process.stdout.readline()
        if ready:
            process.terminate()
        _, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert not ready, f"the Hub started: {ready}"
    assert process.returncode == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("amux hub: unsafe socket directory "), err
    return lines[0]


def run_as(user: pwd.struct_passwd, *argv: str) -> None:
    assert as_user(user, *argv).wait(timeout=30) == 0


def test_a_fallback_directory_made_by_another_user_stops_the_hub(long_home: Path) -> None:
    fallback = owner_socket_path(long_home).parent
    with throwaway_user() as attacker:
        run_as(attacker, "mkdir", "-m", "0777", str(fallback))
        error = start_refused(long_home)
        assert f"unsafe socket directory {fallback}: it is owned by uid {attacker.pw_uid} " \
               f"({attacker.pw_name}), not by the Hub's user" in error
        assert f"remove it (as root or its owner): rm -r {fallback}" in error
        assert os.listdir(fallback) == []  # nothing was bound where the attacker can look


def _symlinked_fallback(home: Path, temp_root: Path) -> tuple[Path, list[str]]:
    """The attacker points the fallback directory at a directory of their own."""
    fallback = owner_socket_path(home).parent
    with throwaway_user() as attacker:
        run_as(attacker, "mkdir", "-m", "0777", str(temp_root / "bait"))
        run_as(attacker, "ln", "-s", str(temp_root / "bait"), str(fallback))
        error = start_refused(home)
        assert os.listdir(temp_root / "bait") == []
    return home, [error, f"{fallback} is a symlink to {temp_root / 'bait'}, owned by uid "
                  f"{attacker.pw_uid}", f"rm {fallback}"]


def _group_writable_fallback(home: Path, temp_root: Path) -> tuple[Path, list[str]]:
    fallback = owner_socket_path(home).parent
    fallback.mkdir()
    fallback.chmod(0o770)
    return home, [start_refused(home), f"{fallback}: it is writable by others (mode 0770)",
                  f"run: chmod 700 {fallback}"]


def _writable_temp_root_without_sticky_bit(home: Path, temp_root: Path) -> tuple[Path, list[str]]:
    temp_root.chmod(0o777)
    return home, [start_refused(home), f"{temp_root}, on the way to it, is writable by others "
                  "(mode 0777) and not sticky"]


def _symlinked_home(home: Path, temp_root: Path) -> tuple[Path, list[str]]:
    """A short AMUX_HOME reached through a symlink: `<AMUX_HOME>/run` is checked too."""
    real = temp_root / "real"
    real.mkdir(mode=0o700)
    link = temp_root / "link"
    link.symlink_to(real)
    short = link / "home"
    assert owner_socket_path(short).parent == short / "run"
    return short, [start_refused(short), f"{link} is a symlink to {real}, owned by uid 0",
                   f"use the real path, {real / 'home' / 'run'}"]


@pytest.mark.parametrize("prepare", [_symlinked_fallback, _group_writable_fallback,
                                     _writable_temp_root_without_sticky_bit, _symlinked_home])
def test_a_symlink_or_a_writable_directory_on_the_way_stops_the_hub(
        prepare: Callable[[Path, Path], tuple[Path, list[str]]], long_home: Path,
        temp_root: Path) -> None:
    require_root("a root-owned Hub next to another user")
    home, (error, *expected) = prepare(long_home, temp_root)
    for part in expected:
        assert part in error
    assert not (home / "run" / "hub.sock").exists()


@pytest.mark.parametrize("below", [False, True], ids=["theirs", "below-theirs"])
def test_a_shared_socket_directory_of_another_user_stops_the_hub(
        short_home: Path, temp_root: Path, below: bool) -> None:
    with throwaway_user() as attacker:
        theirs = temp_root / "shared"
        run_as(attacker, "mkdir", "-m", "0755", str(theirs))
        shared = (theirs / "sub" if below else theirs) / "hub.sock"
        first = HubProcess(short_home)
        try:
            first.call("/v1/admin/config", {"action": "set", "key": "listeners.shared_socket",
                                            "value": str(shared)})
        finally:
            first.stop()
        error = start_refused(short_home)
        owner = f"owned by uid {attacker.pw_uid} ({attacker.pw_name})"
        if below:
            assert f"{theirs}, on the way to it, is {owner}" in error
        else:
            assert f"unsafe socket directory {theirs}: it is {owner}" in error
        assert "amux system config set listeners.shared_socket PATH" in error
        assert sorted(os.listdir(theirs)) == []  # neither a socket nor a `sub` made there


def test_the_hub_makes_its_own_directories_private(long_home: Path, temp_root: Path) -> None:
    fallback = owner_socket_path(long_home).parent
    fallback.mkdir(mode=0o755)
    fallback.chmod(0o755)  # ours, but readable by others: tightened, not refused
    hub = HubProcess(long_home)
    try:
        assert hub.socket_path == str(owner_socket_path(long_home))
        for directory in (fallback, long_home / "run"):
            info = os.lstat(directory)
            assert (info.st_uid, stat.S_IMODE(info.st_mode)) == (os.geteuid(), 0o700)
        assert hub.call("/v1/status", {})[0] == 200
    finally:
        hub.stop()


def test_a_shared_socket_another_hub_serves_is_not_taken_over(temp_root: Path) -> None:
    """A live socket at the shared path (another home's Hub) is not unlinked: the new
    Hub refuses with one line and the first keeps serving."""
    shared = temp_root / "shared" / "hub.sock"
    homes = [Path(tempfile.mkdtemp(prefix="amux-", dir="/tmp")) / "home" for _ in range(2)]
    hubs = []
    try:
        for home in homes:
            setup = HubProcess(home)
            setup.call("/v1/admin/config", {"action": "set", "key": "listeners.shared_socket",
                                            "value": str(shared)})
            setup.stop()
        hubs.append(HubProcess(homes[0]))
        process = subprocess.run([sys.executable, "-m", "amux.hub.server", str(homes[1])],
                                 capture_output=True, text=True, timeout=30)
        assert process.returncode == 2 and not process.stdout, process
        lines = process.stderr.strip().splitlines()
        assert len(lines) == 1 and f"another process is listening on {shared}" in lines[0]
        status = hubs[0].status["listeners"]
        assert ("shared", f"unix:{shared}") in [(e["kind"], e["address"]) for e in status]
        from tests.hubproc import Caller
        shared_caller = Caller(str(shared), hubs[0].owner_token)
        try:
            assert shared_caller.call("/v1/status", {})[0] == 200
        finally:
            shared_caller.close()
    finally:
        for hub in hubs:
            hub.stop()
        for home in homes:
            shutil.rmtree(home.parent, ignore_errors=True)
