"""A Hub whose disk is full, read-only or not its own: every write says so, keeps the old.

Real faults only: AMUX_HOME on a small tmpfs filled to ENOSPC or remounted read-only,
and a Hub run as a throwaway non-root user whose scope directory is made 0500 (root
would bypass the permission). Each refused write is `storage_unavailable` (507) naming
the errno; the document, the configuration and the identities stay as they were, no
temp file is left, and an identity change that could not be saved is not in force.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import amux
from amux.client.tools import MemoryTools
from tests.hostile import as_user, fill, remount, small_tmpfs, throwaway_user
from tests.hubproc import Caller, HubProcess


@pytest.fixture
def mount() -> Iterator[Path]:
    """A 4 MiB tmpfs under a short /tmp path (the Hub's socket path must fit)."""
    with tempfile.TemporaryDirectory(prefix="amux-", dir="/tmp") as directory, \
            small_tmpfs(Path(directory) / "m", size="4m") as mounted:
        yield mounted


def enable(caller: Caller) -> None:
    assert caller.call("/v1/admin/config", {"action": "set", "key": "memory.enabled",
                                            "value": "true"})[0] == 200


def put(caller: Caller, path: str, content: str, revision: str = "absent") -> tuple[int, Any]:
    return caller.call("/v1/memory/upsert", {"path": path, "content": content,
                                             "expected_revision": revision})


def refused(answer: tuple[int, Any], errno_name: str) -> None:
    status, body = answer
    assert status == 507, body
    assert body["error"]["code"] == "storage_unavailable"
    assert body["error"]["errno"] == errno_name
    assert "your change was not saved" in body["error"]["message"]


def no_temps(home: Path) -> None:
    assert not [path for path in home.rglob(".amux-tmp-*")]


def test_a_revocation_that_cannot_be_saved_is_not_in_force(mount: Path) -> None:
    home = mount / "home"
    hub = HubProcess(home)
    try:
        alice = hub.call("/v1/admin/principals", {"action": "add", "name": "alice"})[1]
        revoke = {"action": "revoke", "name": "alice", "token_id": alice["token_id"]}
        filler = fill(mount)
        refused(hub.call("/v1/admin/principals", revoke), "ENOSPC")
        assert hub.call("/v1/status", {}, token=alice["token"])[0] == 200  # still valid
        refused(hub.call("/v1/admin/principals", revoke), "ENOSPC")  # not "no token"
        filler.unlink()
        assert hub.call("/v1/admin/principals", revoke)[0] == 200
    finally:
        hub.stop()
    restarted = HubProcess(home)
    try:
        assert restarted.call("/v1/status", {}, token=alice["token"])[0] == 401
    finally:
        restarted.stop()
    no_temps(home)


def test_a_full_disk_refuses_every_write_and_keeps_the_old(
        mount: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = mount / "home"
    hub = HubProcess(home)
    try:
        enable(hub)
        revision = put(hub, "notes/a.md", "old\n")[1]["revision"]
        fill(mount)
        refused(put(hub, "notes/a.md", "new\n", revision), "ENOSPC")
        monkeypatch.setenv("AMUX_MEMORY_CONFIG", str(home / "credentials" / "owner.json"))
        text, is_error = MemoryTools().call("memory_upsert", {
            "path": "notes/a.md", "content": "new\n", "expected_revision": revision})
        error = json.loads(text)["error"]  # what an agent reads through MCP
        assert is_error and (error["code"], error["errno"]) == ("storage_unavailable", "ENOSPC")
        assert error["message"].startswith("the Hub's disk is full")
        assert "your change was not saved" in error["message"]
        refused(put(hub, "notes/b.md", "created\n"), "ENOSPC")
        refused(hub.call("/v1/admin/config", {"action": "set", "key": "isolation.enabled",
                                              "value": "true"}), "ENOSPC")
        refused(hub.call("/v1/admin/principals", {"action": "add", "name": "bob"}), "ENOSPC")
        refused(hub.call("/v1/admin/principals", {"action": "delegate", "name": _owner(hub),
                                                  "binding": "global"}), "ENOSPC")
        page = hub.call("/v1/memory/get", {"path": "notes/a.md"})[1]
        assert (page["content"], page["revision"]) == ("old\n", revision)
        assert hub.call("/v1/memory/get", {"path": "notes/b.md"})[1]["exists"] is False
        assert hub.call("/v1/admin/config", {"action": "get",
                                             "key": "isolation.enabled"})[1]["value"] is False
        names = [p["principal"] for p in
                 hub.call("/v1/admin/principals", {"action": "list"})[1]["principals"]]
        assert "bob" not in names
        no_temps(home)
        # Deleting needs no space (it frees some): a full disk does not stop a forget.
        assert hub.call("/v1/memory/forget", {"path": "notes/a.md",
                                              "expected_revision": revision})[1]["deleted"]
    finally:
        hub.stop()


def test_a_read_only_disk_refuses_every_write_and_serves_reads(mount: Path) -> None:
    home = mount / "home"
    hub = HubProcess(home)
    try:
        enable(hub)
        revision = put(hub, "a.md", "old\n")[1]["revision"]
        remount(mount, read_only=True)
        refused(put(hub, "a.md", "new\n", revision), "EROFS")
        refused(hub.call("/v1/memory/forget", {"path": "a.md", "expected_revision": revision}),
                "EROFS")
        refused(hub.call("/v1/admin/config", {"action": "set", "key": "isolation.enabled",
                                              "value": "true"}), "EROFS")
        refused(hub.call("/v1/admin/principals", {"action": "add", "name": "bob"}), "EROFS")
        page = hub.call("/v1/memory/get", {"path": "a.md"})[1]
        assert (page["content"], page["revision"]) == ("old\n", revision)
        found = hub.call("/v1/memory/search", {"query": "old"})[1]
        assert [result["path"] for result in found["results"]] == ["a.md"]
        remount(mount, read_only=False)
    finally:
        hub.stop()
    no_temps(home)


def test_a_hub_starts_on_a_read_only_memory_root_and_serves_reads(short_home: Path) -> None:
    """Only the memory root read-only (a snapshot mount, say), `run/` writable: the Hub
    starts, reads work, writes are storage_unavailable (EROFS); a hand-added 0644
    document it could not make private is counted, not fatal."""
    first = HubProcess(short_home)
    enable(first)
    assert put(first, "a.md", "kept\n")[0] == 200
    first.stop()
    memory = short_home / "memory"
    saved = Path(tempfile.mkdtemp(prefix="amux-saved-"))
    try:
        for entry in memory.iterdir():
            os.rename(entry, saved / entry.name)
        with small_tmpfs(memory, size="1m", mode="0700"):
            for entry in saved.iterdir():
                subprocess.run(["cp", "-a", str(entry), str(memory)], check=True)
            (memory / "global" / "b.md").write_text("by hand\n")
            (memory / "global" / "b.md").chmod(0o644)
            remount(memory, read_only=True)
            hub = HubProcess(short_home)
            try:
                assert hub.call("/v1/memory/get", {"path": "a.md"})[1]["content"] == "kept\n"
                refused(put(hub, "c.md", "new\n"), "EROFS")
            finally:
                hub.stop()
    finally:
        subprocess.run(["rm", "-rf", str(saved)], check=True)


def test_a_scope_the_hubs_user_may_not_write_is_eacces(tmp_path: Path) -> None:
    interpreter = Path(f"/usr/bin/python{sys.version_info.major}.{sys.version_info.minor}")
    if not interpreter.exists():  # the venv's own interpreter lives under root's 0700 home
        pytest.skip(f"a world-readable {interpreter} to run the Hub as another user")
    with tempfile.TemporaryDirectory(prefix="amux-", dir="/tmp") as directory, \
            throwaway_user() as user:
        os.chown(directory, user.pw_uid, user.pw_gid)
        home = Path(directory) / "home"
        path = os.pathsep.join([str(Path(amux.__file__).parents[1]),
                                sysconfig.get_paths()["purelib"]])
        process = as_user(user, str(interpreter), "-m", "amux.hub.server", str(home),
                          env={"PATH": os.defpath, "HOME": user.pw_dir, "PYTHONPATH": path},
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            assert process.stdout is not None
            line = process.stdout.readline()
            assert line, process.stderr.read() if process.stderr else ""
            socket_path = json.loads(line)["address"].removeprefix("unix:")
            token = json.loads((home / "credentials" / "owner.json").read_text())["token"]
            hub = Caller(socket_path, token)
            enable(hub)
            revision = put(hub, "a.md", "old\n")[1]["revision"]
            (home / "memory" / "global").chmod(0o500)
            refused(put(hub, "a.md", "new\n", revision), "EACCES")
            refused(hub.call("/v1/memory/forget", {"path": "a.md",
                                                   "expected_revision": revision}), "EACCES")
            assert hub.call("/v1/memory/get", {"path": "a.md"})[1]["content"] == "old\n"
            no_temps(home)
            hub.close()
        finally:
            process.send_signal(signal.SIGTERM)
            process.communicate(timeout=30)


def _owner(hub: HubProcess) -> str:
    principals = hub.call("/v1/admin/principals", {"action": "list"})[1]["principals"]
    return str(next(p["principal"] for p in principals if p["owner"]))
