"""A real Hub process on a temp AMUX_HOME, spoken to over its real Unix socket."""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest


class UnixConnection(http.client.HTTPConnection):
    """http.client over a Unix socket (test side only; the amux client is separate)."""

    def __init__(self, path: str) -> None:
        super().__init__("localhost", timeout=10)
        self.unix_path = path

    def connect(self) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(10)
        self.sock.connect(self.unix_path)


class HubProcess:
    def __init__(self, home: Path) -> None:
        self.home = home
        self.process = subprocess.Popen(
            [sys.executable, "-m", "amux.hub.server", str(home)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        assert line, self.process.stderr.read() if self.process.stderr else "no output"
        self.status = json.loads(line)
        self.socket_path = self.status["address"].removeprefix("unix:")
        owner = json.loads((home / "credentials" / "owner.json").read_text())
        self.owner_token = owner["token"]
        self.connection = UnixConnection(self.socket_path)

    def call(self, path: str, body: dict[str, Any], token: str | None = None,
             binding: str | None = None) -> tuple[int, Any]:
        headers = {"Content-Type": "application/json",
                   "Authorization": f"Bearer {token or self.owner_token}"}
        if binding:
            headers["X-Amux-Binding"] = binding
        self.connection.request("POST", path, json.dumps(body), headers)
        response = self.connection.getresponse()
        return response.status, json.loads(response.read())

    def stop(self) -> int:
        """SIGTERM (if still running), then collect the exit code and close the pipes."""
        self.connection.close()
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        self.process.communicate(timeout=20)
        return self.process.returncode


@pytest.fixture
def short_home() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="amux-", dir="/tmp") as directory:
        yield Path(directory) / "home"


@pytest.fixture
def hub(short_home: Path) -> Iterator[HubProcess]:
    process = HubProcess(short_home)
    yield process
    process.stop()


def test_ready_line_files_and_modes(hub: HubProcess) -> None:
    status = hub.status
    assert status["running"] is True and status["pid"] == hub.process.pid
    assert status["memory_enabled"] is False and status["isolation_enabled"] is False
    assert set(status) >= {"pid", "address", "memory_root", "memory_enabled",
                           "isolation_enabled", "listeners", "version"}
    assert stat.S_IMODE(os.stat(hub.socket_path).st_mode) == 0o600
    assert stat.S_IMODE((hub.home / "run").stat().st_mode) == 0o700
    assert stat.S_IMODE((hub.home / "credentials" / "owner.json").stat().st_mode) == 0o600
    assert (hub.home / "run" / "hub.pid").read_text().strip() == str(hub.process.pid)


def test_memory_over_the_socket_with_keep_alive(hub: HubProcess) -> None:
    assert hub.call("/v1/memory/get", {"path": "a.md"})[1]["error"]["code"] == "memory_disabled"
    status, body = hub.call("/v1/admin/config",
                            {"action": "set", "key": "memory.enabled", "value": "true"})
    assert (status, body["value"]) == (200, True)
    alice = hub.call("/v1/admin/principals", {"action": "add", "name": "alice"})[1]["token"]
    status, put = hub.call("/v1/memory/upsert", {"path": "MEMORY.md", "content": "记忆 ok\n",
                                                 "expected_revision": "absent"}, alice)
    assert status == 200 and put["created"] is True
    status, got = hub.call("/v1/memory/get", {"path": "MEMORY.md"}, alice)
    assert got["content"] == "记忆 ok\n" and got["revision"] == put["revision"]
    status, conflict = hub.call("/v1/memory/upsert", {"path": "MEMORY.md", "content": "x",
                                                      "expected_revision": "absent"}, alice)
    assert (status, conflict["error"]["code"]) == (409, "revision_conflict")
    assert conflict["error"]["current_revision"] == put["revision"]
    status, bad = hub.call("/v1/memory/get", {"path": "a.md"}, "amux_" + "x" * 43)
    assert (status, bad["error"]["code"]) == (401, "unauthenticated")


def test_sighup_rereads_config(hub: HubProcess) -> None:
    hub.call("/v1/admin/config", {"action": "set", "key": "memory.enabled", "value": "true"})
    assert hub.call("/v1/binding", {})[0] == 200
    config = hub.home / "config.toml"
    config.write_text(config.read_text().replace("enabled = true", "enabled = false"))
    hub.process.send_signal(signal.SIGHUP)
    for _ in range(50):
        status, body = hub.call("/v1/binding", {})
        if status == 503:
            break
        time.sleep(0.1)
    assert body["error"]["code"] == "memory_disabled"


def test_a_second_hub_on_the_same_root_refuses(hub: HubProcess) -> None:
    second = subprocess.run([sys.executable, "-m", "amux.hub.server", str(hub.home)],
                            capture_output=True, text=True, timeout=30)
    assert second.returncode != 0
    assert "already in use" in second.stderr
    assert hub.call("/v1/admin/principals", {"action": "list"})[0] == 200  # first unharmed


def test_sigterm_shuts_down_cleanly(short_home: Path) -> None:
    process = HubProcess(short_home)
    process.call("/v1/admin/principals", {"action": "list"})  # leave an idle keep-alive open
    process.process.send_signal(signal.SIGTERM)
    assert process.process.wait(timeout=20) == 0  # the idle connection does not hold it up
    assert process.stop() == 0
    assert not os.path.exists(process.socket_path)
    assert not (short_home / "run" / "hub.pid").exists()
    # The owner credential survives and works for the next start.
    again = HubProcess(short_home)
    assert again.call("/v1/admin/principals", {"action": "list"})[0] == 200
    assert again.stop() == 0
