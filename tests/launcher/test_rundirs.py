"""Run directories of dead launchers: judged by pid and start time, kept while unrevoked.

A reused pid (a live, unrelated process) or an unreaped zombie must not keep a dead
launcher's delegated token valid until its TTL; a token the Hub cannot revoke (its
disk is full) keeps its run directory, so a later launch tries again.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from amux import pidfile
from amux.client.connection import Connection, owner_config_path, read_config
from amux.launcher import rundirs, wiring
from tests.hostile import fill, small_tmpfs
from tests.hubproc import HubProcess
from tests.wait import wait_until


@pytest.fixture(autouse=True)
def no_isolated_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`clean_stale_runs` also scans the isolated runs root: keep it to the test's own."""
    monkeypatch.setenv("AMUX_RUNS_DIR", str(tmp_path / "runs"))


def owner_connection(hub: HubProcess) -> Connection:
    return read_config(owner_config_path(hub.home), "test", None)


def delegated(hub: HubProcess) -> dict[str, str]:
    principals = hub.call("/v1/admin/principals", {"action": "list"})[1]["principals"]
    owner = next(p["principal"] for p in principals if p["owner"])
    issued: dict[str, str] = hub.call("/v1/admin/principals", {
        "action": "delegate", "name": owner, "binding": "global", "ttl": 3600})[1]
    return issued


def run_dir(home: Path, name: str, launcher: str, token: dict[str, str] | None) -> Path:
    directory = rundirs.plain_root(home) / name
    directory.mkdir(parents=True)
    (directory / "launcher.pid").write_text(launcher)
    if token is not None:
        (directory / "token.json").write_text(json.dumps(
            {"principal": token["principal"], "token_id": token["token_id"]}))
    return directory


def valid(hub: HubProcess, token: dict[str, str]) -> bool:
    return hub.call("/v1/status", {}, token=token["token"])[0] == 200


@pytest.fixture
def unrelated() -> Iterator[psutil.Process]:
    """A live process that is no launcher: what a reused pid names."""
    process = subprocess.Popen(["sleep", "60"])
    try:
        yield psutil.Process(process.pid)
    finally:
        process.kill()
        process.wait()


def test_a_reused_pid_does_not_keep_a_dead_launchers_token(
        hub: HubProcess, unrelated: psutil.Process) -> None:
    token = delegated(hub)
    reused = run_dir(hub.home, "reused", f"{unrelated.pid} {unrelated.create_time() - 1000}\n",
                     token)
    mine = run_dir(hub.home, "mine", pidfile.current().render(), None)
    wiring.clean_stale_runs(hub.home, owner_connection(hub))
    assert not reused.exists() and not valid(hub, token)
    assert mine.exists()  # a live launcher's, same pid and start time


@pytest.mark.parametrize("with_start_time", [True, False], ids=["pid and start", "pid only"])
def test_a_zombie_launcher_counts_as_gone(tmp_path: Path, with_start_time: bool) -> None:
    child = subprocess.Popen(["true"])
    try:
        zombie = psutil.Process(child.pid)
        wait_until(lambda: zombie.status() == psutil.STATUS_ZOMBIE, 10,
                   "the exited child to be a zombie")
        directory = tmp_path / "zombie"
        directory.mkdir()
        started = f" {zombie.create_time()}" if with_start_time else ""
        (directory / "launcher.pid").write_text(f"{child.pid}{started}\n")
        assert [found for found, _ in rundirs.stale(tmp_path)] == [directory]
    finally:
        child.wait()


def test_an_old_pid_only_record_is_still_read(tmp_path: Path,
                                              unrelated: psutil.Process) -> None:
    (tmp_path / "live").mkdir()
    (tmp_path / "live" / "launcher.pid").write_text(f"{unrelated.pid}\n")
    (tmp_path / "dead").mkdir()
    (tmp_path / "dead" / "launcher.pid").write_text("999999999\n")
    assert [found.name for found, _ in rundirs.stale(tmp_path)] == ["dead"]


def test_a_token_the_hub_cannot_revoke_keeps_its_run_directory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with tempfile.TemporaryDirectory(prefix="amux-", dir="/tmp") as directory, \
            small_tmpfs(Path(directory) / "m", size="4m") as mount:
        hub = HubProcess(mount / "home")
        try:
            connection = owner_connection(hub)
            token = delegated(hub)
            stale = run_dir(hub.home, "stale", "999999999\n", token)
            active = run_dir(hub.home, "active", pidfile.current().render(), token)
            issued = wiring.Issued(rundirs.Token(
                token["principal"], "global", token["token"], token["token_id"], own=False,
                expires_at=None, hub=connection.hub, hub_uid=connection.hub_uid), connection)
            filler = fill(mount)
            wiring.clean_stale_runs(hub.home, connection)
            assert stale.exists() and valid(hub, token)
            warning = wiring.revoke(issued)  # the session ends while the disk is full
            assert warning is not None and "storage_unavailable" in warning
            assert "not revoked" in warning and active.exists() and valid(hub, token)
            filler.unlink()
            wiring.clean_stale_runs(hub.home, connection)
            assert not stale.exists() and not valid(hub, token)
            assert wiring.revoke(issued) is None
        finally:
            hub.stop()


@pytest.mark.timeout(20)
def test_removal_never_opens_a_fifo_or_follows_a_link(tmp_path: Path) -> None:
    """What an isolated agent may leave in its `memory`: a FIFO (where a directory was:
    `shutil.rmtree` would open it and wait), a link to something outside, deep trees."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep").write_text("x")
    run = tmp_path / "runs" / "s"
    memory = run / "agent-config" / "memory"
    memory.mkdir(parents=True)
    os.mkfifo(memory / "fifo")
    (memory / "link").symlink_to(outside)
    deep = memory
    for _ in range(10):
        deep = deep / "d"
    deep.mkdir(parents=True)
    assert rundirs.remove(run) is True
    assert not run.exists() and (outside / "keep").read_text() == "x"


def test_a_tree_deeper_than_the_limit_is_left(tmp_path: Path) -> None:
    run = tmp_path / "runs" / "s"
    deep = run
    for _ in range(rundirs.REMOVE_DEPTH + 1):
        deep = deep / "d"
    deep.mkdir(parents=True)
    assert rundirs.remove(run) is False
    assert run.exists()
    assert rundirs.remove(tmp_path / "runs" / "absent") is True
