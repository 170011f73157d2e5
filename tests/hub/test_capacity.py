"""A Hub at its connection cap (issue 25), with real processes: each listener's cap comes
from the descriptor limit (here a small one, set with `prlimit`), a refused client reads
`hub_busy` instead of a reset, amux clients retry it, the owner is never locked out, and
an MCP server's idle connection is closed."""

from __future__ import annotations

import json
import os
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from amux.client.transport import HubClient
from amux.errors import AmuxError
from amux.hub import loop
from tests.hub.exposed import Exposed, expose
from tests.hub.rawhttp import connect, parse, request
from tests.hubproc import HubProcess, amux
from tests.wait import wait_until

NOFILE = 640
"""The descriptor limit of the capped Hubs: with its three listeners each takes
(640 - 128 - 3 × (16 + 64)) // 3 = 90 connections."""


def _capped(nofile: int = NOFILE) -> tuple[str, ...]:
    return ("prlimit", f"--nofile={nofile}")


@pytest.fixture
def capped(short_home: Path, tmp_path: Path) -> Iterator[Exposed]:
    hub = expose(short_home, tmp_path, _capped())
    yield hub
    hub.hub.stop()


def _answer_now(sock: socket.socket) -> int | None:
    """The status the Hub has sent on `sock` so far; None: nothing yet."""
    sock.setblocking(False)
    try:
        data = sock.recv(65536)
    except BlockingIOError:
        return None
    answers, _ = parse(data)
    return answers[0].status if answers else None


def _get_request(token: str) -> bytes:
    return request("/v1/memory/get", {"path": "MEMORY.md"}, token)


def _held(hub: HubProcess, token: str, count: int,
          opened: list[socket.socket]) -> list[socket.socket]:
    """`count` authenticated keep-alive connections on the owner's socket, each idle
    after one answered `get` (as a pooled MCP connection was)."""
    held = []
    for _ in range(count):
        sock = connect(hub.socket_path, timeout=10)
        opened.append(sock)
        sock.sendall(_get_request(token))
        held.append(sock)
    for sock in held:
        data = b""
        while not parse(data)[0]:
            data += sock.recv(65536)
        assert parse(data)[0][0].status == 200
    return held


def test_each_listener_takes_its_share_of_the_descriptor_limit(capped: Exposed) -> None:
    assert capped.cap() == (NOFILE - loop.FD_RESERVE
                            - 3 * (loop.OWNER_RESERVE + loop.REFUSING_MAX)) // 3
    kinds = [listener["kind"] for listener in capped.hub.status["listeners"]]
    assert kinds == ["owner", "shared", "tls"]


def test_stalled_heads_fill_their_listener_and_every_refused_one_is_told(
        capped: Exposed, opened: list[socket.socket]) -> None:
    """Heads that never end fill the shared socket up to its cap; each connection past
    it reads `hub_busy` (none is reset); the owner's socket still serves; once they go
    the shared socket serves again."""
    cap = capped.cap()
    partial = b"POST /v1/memory/get HTTP/1.1\r\nHost: amux-hub\r\nX-Pad: " + b"p" * 4000
    held = []
    for _ in range(cap + 150):  # past the cap, past the refusals it answers at leisure too
        sock = connect(capped.shared, timeout=5)
        opened.append(sock)
        sock.sendall(partial)
        held.append(sock)
    answered: dict[int, int | None] = {}

    def refused() -> bool:
        for index, sock in enumerate(held):
            if answered.get(index) is None:
                answered[index] = _answer_now(sock)
        return sum(status is not None for status in answered.values()) >= 150

    wait_until(refused, 10, "the connections past the cap to be refused")
    statuses = [answered[index] for index in range(len(held))]
    assert statuses.count(None) == cap  # held, until their head deadline
    assert statuses.count(503) == 150
    shared = capped.connection(f"unix:{capped.shared}")
    with pytest.raises(AmuxError) as busy, HubClient(shared, timeout=1.0) as client:
        client.call("/v1/memory/get", {"path": "MEMORY.md"})  # retried for 1 s, then said
    assert (busy.value.code, busy.value.exit_code) == ("hub_busy", 4)
    with HubClient(capped.connection(f"unix:{capped.hub.socket_path}")) as client:
        assert client.call("/v1/memory/get", {"path": "MEMORY.md"})["exists"] is False
    for sock in held:
        sock.close()
    with HubClient(shared) as client:  # retried until the Hub noticed the closes
        assert client.call("/v1/memory/get", {"path": "MEMORY.md"})["exists"] is False


def test_a_refused_tls_client_reads_hub_busy(capped: Exposed,
                                             opened: list[socket.socket]) -> None:
    context = ssl.create_default_context(cafile=str(capped.cert))

    def tls() -> ssl.SSLSocket:
        raw = socket.create_connection(("127.0.0.1", capped.tls_port), timeout=10)
        opened.append(raw)  # closed by the wrapped socket, or here if wrapping fails
        wrapped = context.wrap_socket(raw, server_hostname="127.0.0.1")
        opened.append(wrapped)  # kept: a socket collected as garbage is closed
        return wrapped

    token = capped.hub.owner_token
    for _ in range(capped.cap()):  # handshaken, one answered get each, then idle
        sock = tls()
        sock.sendall(_get_request(token))
        assert sock.recv(65536).startswith(b"HTTP/1.1 200")
    refused = tls()  # the handshake completes: the Hub answers before it closes
    refused.sendall(_get_request(token))
    answers, _ = parse(refused.recv(65536))
    assert (answers[0].status, answers[0].code) == (503, "hub_busy")
    remote = capped.connection(f"https://127.0.0.1:{capped.tls_port}", str(capped.cert))
    with pytest.raises(AmuxError) as busy, HubClient(remote, timeout=1.0) as client:
        client.call("/v1/memory/get", {"path": "MEMORY.md"})
    assert busy.value.code == "hub_busy"  # not hub_unreachable


def test_a_full_owner_socket_never_locks_out_its_owner(
        short_home: Path, opened: list[socket.socket]) -> None:
    """The owner's own sessions fill its socket: `amux hub status` still answers at
    once (the reserve), and `amux memory show` waits, retrying, until a connection
    goes, then succeeds (real CLI processes)."""
    first = HubProcess(short_home)
    first.call("/v1/admin/config", {"action": "set", "key": "memory.enabled", "value": "true"})
    first.call("/v1/memory/upsert", {"path": "MEMORY.md", "content": "# Memory\n",
                                     "expected_revision": "absent"})
    first.stop()
    hub = HubProcess(short_home, _capped(400))
    try:
        cap = int(hub.status["listeners"][0]["connections"]["max"])
        assert cap == 400 - loop.FD_RESERVE - loop.OWNER_RESERVE - loop.REFUSING_MAX
        held = _held(hub, hub.owner_token, cap, opened)
        started = time.monotonic()
        code, status, err = amux(short_home, "hub", "status")
        assert code == 0 and status["running"] is True, err
        assert time.monotonic() - started < 1.0 + 2.0  # a CLI start, then no wait
        assert status["listeners"][0]["connections"]["held"] == cap
        environment = {key: value for key, value in os.environ.items()
                       if not key.startswith("AMUX_")}
        show = subprocess.Popen([sys.executable, "-m", "amux", "memory", "show", "MEMORY.md"],
                                env={**environment, "AMUX_HOME": str(short_home)},
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            time.sleep(1.5)  # the test: still refused, still retrying 1.5 s later
            assert show.poll() is None
            for sock in held[:3]:
                sock.close()
            out, err = show.communicate(timeout=20)
        finally:
            if show.poll() is None:
                show.kill()
                show.communicate()
        assert show.returncode == 0, err
        assert json.loads(out)["content"] == "# Memory\n"
    finally:
        hub.stop()


def test_an_mcp_server_closes_its_idle_connection(memory_hub: HubProcess) -> None:
    """A session's connection is held while it calls and a moment after, not for the
    session's life."""
    from amux.client.tools import IDLE_CLOSE_SECONDS

    def held() -> int:
        status = memory_hub.call("/v1/status", {})[1]
        return int(status["listeners"][0]["connections"]["held"])

    before = held()
    environment = {key: value for key, value in os.environ.items()
                   if not key.startswith("AMUX_")}
    server = subprocess.Popen([sys.executable, "-m", "amux", "memory", "mcp"],
                              env={**environment, "AMUX_HOME": str(memory_hub.home)},
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    assert server.stdin is not None and server.stdout is not None
    try:
        for message in (
                {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                    "protocolVersion": "2025-11-25", "capabilities": {},
                    "clientInfo": {"name": "test", "version": "1"}}},
                {"jsonrpc": "2.0", "method": "notifications/initialized"},
                {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
                    "name": "memory_get", "arguments": {"path": "MEMORY.md"}}}):
            server.stdin.write(json.dumps(message) + "\n")
            server.stdin.flush()
            if "id" in message:
                assert "result" in json.loads(server.stdout.readline())
        # the start-up check's own connection is closed; the call's is kept for the next one
        wait_until(lambda: held() == before + 1, 5, "only the call's connection to be held")
        wait_until(lambda: held() <= before, IDLE_CLOSE_SECONDS + 3,
                   "the idle connection to be closed")
        server.stdin.write(json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                                       "params": {"name": "memory_get",
                                                  "arguments": {"path": "MEMORY.md"}}}) + "\n")
        server.stdin.flush()
        assert "result" in json.loads(server.stdout.readline())  # it connects again
    finally:
        try:
            server.communicate(timeout=20)  # stdin closed: it ends
        except subprocess.TimeoutExpired:
            server.kill()
            server.communicate()
