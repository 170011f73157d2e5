"""A real Hub process on a temp AMUX_HOME, spoken to over its real Unix socket."""

from __future__ import annotations

import json
import os
import signal
import socket
import stat
import subprocess
import sys
from pathlib import Path

from tests.hubproc import Caller, HubProcess
from tests.wait import wait_until


def test_ready_line_files_and_modes(hub: HubProcess) -> None:
    status = hub.status
    assert status["running"] is True and status["pid"] == hub.process.pid
    assert status["memory_enabled"] is False and status["isolation_enabled"] is False
    assert set(status) >= {"pid", "address", "memory_root", "memory_enabled",
                           "isolation_enabled", "listeners", "version"}
    assert stat.S_IMODE(os.stat(hub.socket_path).st_mode) == 0o600
    assert stat.S_IMODE((hub.home / "run").stat().st_mode) == 0o700
    assert stat.S_IMODE((hub.home / "credentials" / "owner.json").stat().st_mode) == 0o600
    assert (hub.home / "run" / "hub.pid").read_text().split()[0] == str(hub.process.pid)


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
    _, body = wait_until(lambda: (answer := hub.call("/v1/binding", {}))[0] == 503
                         and answer, 5, "the Hub to reread its config")
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


def test_shared_socket_serves_tokens_but_not_administration(short_home: Path) -> None:
    first = HubProcess(short_home)
    shared = short_home.parent / "shared" / "hub.sock"
    first.call("/v1/admin/config", {"action": "set", "key": "listeners.shared_socket",
                                    "value": str(shared)})
    first.call("/v1/admin/config", {"action": "set", "key": "memory.enabled", "value": "true"})
    alice = first.call("/v1/admin/principals", {"action": "add", "name": "alice"})[1]["token"]
    assert first.stop() == 0
    hub = HubProcess(short_home)  # listener changes apply at start
    try:
        assert ("shared", f"unix:{shared}") in [(listener["kind"], listener["address"])
                                                for listener in hub.status["listeners"]]
        assert stat.S_IMODE(os.stat(shared).st_mode) == 0o666
        assert stat.S_IMODE(shared.parent.stat().st_mode) == 0o755
        other = Caller(str(shared), hub.owner_token)
        status, put = other.call("/v1/memory/upsert", {"path": "a.md", "content": "x",
                                                       "expected_revision": "absent"}, alice)
        assert status == 200 and put["created"] is True
        status, body = other.call("/v1/admin/principals", {"action": "list"})  # owner token
        assert (status, body["error"]["code"]) == (403, "forbidden")
        status, body = other.call("/v1/memory/get", {"path": "a.md"}, "amux_" + "y" * 43)
        assert (status, body["error"]["code"]) == (401, "unauthenticated")
        other.close()
    finally:
        assert hub.stop() == 0
    assert not shared.exists()


def test_malformed_requests_get_a_clear_400(hub: HubProcess) -> None:
    for raw in (b"NONSENSE\r\n\r\n", b"POST /v1/status HTTP/1.1\r\nContent-Length: x\r\n\r\n",
                b"POST /v1/status HTTP/1.1\r\nContent-Length: 99999999\r\n\r\n",
                b"POST /v1/status HTTP/1.1\r\nno colon here\r\n\r\n"):
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
            client.settimeout(10)
            client.connect(hub.socket_path)
            client.sendall(raw)
            answer = b""
            while chunk := client.recv(65536):
                answer += chunk
        head, _, body = answer.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 400 "), raw
        assert b"Connection: close" in head
        assert json.loads(body)["error"]["code"] == "invalid_argument"
    assert hub.call("/v1/status", {})[0] == 200  # the Hub is unharmed


def test_tls_listener_for_remote_runtimes(short_home: Path, tmp_path: Path) -> None:
    cert, key = tmp_path / "hub.crt", tmp_path / "hub.key"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                    "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True)
    first = HubProcess(short_home)
    for name, value in (("tls_address", "127.0.0.1:0"), ("tls_cert", str(cert)),
                        ("tls_key", str(key))):
        status, _ = first.call("/v1/admin/config", {"action": "set", "key": f"listeners.{name}",
                                                    "value": value})
        assert status == 200, name
    first.call("/v1/admin/config", {"action": "set", "key": "memory.enabled", "value": "true"})
    alice = first.call("/v1/admin/principals", {"action": "add", "name": "alice"})[1]["token"]
    assert first.stop() == 0
    hub = HubProcess(short_home)
    try:
        address = next(entry["address"] for entry in hub.status["listeners"]
                       if entry["kind"] == "tls")
        assert address.startswith("https://127.0.0.1:")
        # A client that connects and never says hello holds up nobody.
        stalled = socket.create_connection(("127.0.0.1", int(address.rsplit(":", 1)[1])))
        config = tmp_path / "remote.json"
        config.write_text(json.dumps({"version": 1, "hub": address, "token": alice,
                                      "ca_file": str(cert)}))
        config.chmod(0o600)
        environment = {**os.environ, "AMUX_MEMORY_CONFIG": str(config)}
        done = subprocess.run([sys.executable, "-m", "amux.client.cli", "upsert", "r.md",
                               "--expected-revision", "absent"], input="remote\n",
                              capture_output=True, text=True, env=environment, timeout=60)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["created"] is True
        admin = subprocess.run([sys.executable, "-m", "amux", "principal", "list"],
                               capture_output=True, text=True, timeout=60,
                               env={**environment, "AMUX_MEMORY_CONFIG": str(config)})
        assert json.loads(admin.stdout)["error"]["code"] == "forbidden"
        untrusted = tmp_path / "untrusted.json"
        untrusted.write_text(json.dumps({"version": 1, "hub": address, "token": alice}))
        untrusted.chmod(0o600)
        refused = subprocess.run([sys.executable, "-m", "amux.client.cli", "show", "r.md"],
                                 capture_output=True, text=True, timeout=60,
                                 env={**os.environ, "AMUX_MEMORY_CONFIG": str(untrusted)})
        assert json.loads(refused.stdout)["error"]["code"] == "hub_unreachable"  # cert checked
        stalled.close()
    finally:
        assert hub.stop() == 0
