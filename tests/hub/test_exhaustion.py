"""Resource exhaustion before authentication, and the limits around it, on a real Hub.

Every test starts a real Hub process and talks to it over its real sockets (the
owner socket, the 0666 shared socket, TLS). The limits are docs/hub.md
"Framing and limits".
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from amux.client.connection import Connection
from amux.client.transport import HubClient
from amux.hub import loop
from amux.hub.http import MAX_BODY_BYTES
from amux.hub.paths import STOP_SECONDS
from tests.hub.exposed import Exposed, expose
from tests.hub.rawhttp import connect, parse, read_answers, read_to_end, request
from tests.hubproc import HubProcess, amux

RSS_LIMIT = 80 * 2**20
BOGUS = "amux_" + "x" * 43
"""A token of the right shape that no principal holds."""
BODY_PART = b"x" * (1024 * 1024 - 1)
"""All of an announced 1 MiB body but its last byte: what a stalling client sends."""


@pytest.fixture
def exposed(short_home: Path, tmp_path: Path) -> Iterator[Exposed]:
    """A Hub with memory on, the shared socket and a TLS listener."""
    hub = expose(short_home, tmp_path)
    yield hub
    hub.hub.stop()


def _announce(token: str | None) -> bytes:
    """The head of an upsert announcing a 1 MiB body."""
    auth = f"Authorization: Bearer {token}\r\n" if token else ""
    return (f"POST /v1/memory/upsert HTTP/1.1\r\nHost: amux-hub\r\n{auth}"
            f"Content-Type: application/json\r\nContent-Length: {MAX_BODY_BYTES}\r\n\r\n"
            ).encode()


def _stall(open_connection: Callable[[], socket.socket], count: int,
           opened: list[socket.socket]) -> list[socket.socket]:
    """`count` connections that announce 1 MiB without a valid token (half with none,
    half with an unknown one), send all of it but the last byte, and stall. A Hub that
    refuses them stops reading, so a send may fail: that is the point."""
    held = []
    for index in range(count):
        sock = open_connection()
        opened.append(sock)
        with contextlib.suppress(OSError):  # refused and closed before the body was read
            sock.sendall(_announce(BOGUS if index % 2 else None) + BODY_PART)
        held.append(sock)
    return held


def _statuses(held: list[socket.socket]) -> list[int | None]:
    """What the Hub answered on each connection (None: nothing yet), then closes them."""
    statuses: list[int | None] = []
    for sock in held:
        sock.settimeout(0.5)
        try:
            answers, _rest = parse(read_to_end(sock))
            statuses.append(answers[0].status if answers else None)
        except (TimeoutError, ssl.SSLError):
            statuses.append(None)
        sock.close()
    return statuses


def _get(connection: Connection) -> object:
    with HubClient(connection, timeout=10) as client:
        return client.call("/v1/memory/get", {"path": "MEMORY.md"})["exists"]


def test_a_bad_token_is_refused_before_the_body(memory_hub: HubProcess) -> None:
    for token in (None, BOGUS):
        with connect(memory_hub.socket_path, timeout=10) as client:
            started = time.monotonic()
            client.sendall(_announce(token))  # and never a byte of the body
            answers = read_answers(client, 1)
            assert [(a.status, a.code) for a in answers] == [(401, "unauthenticated")]
            assert answers[0].closes and time.monotonic() - started < 1
            assert read_to_end(client) == b""  # closed soon, without the body
            assert time.monotonic() - started < loop.REFUSED_DISCARD_SECONDS + 2


def test_500_unauthenticated_connections_on_the_shared_socket(
        exposed: Exposed, opened: list[socket.socket]) -> None:
    idle = exposed.rss()
    held = _stall(lambda: connect(exposed.shared, timeout=5), 500, opened)
    time.sleep(0.5)  # the test: the Hub's memory after a while with them all (no count to poll)
    rss = exposed.rss()
    print(f"\nshared socket: RSS {idle / 2**20:.1f} MB idle, {rss / 2**20:.1f} MB after 500 "
          "unauthenticated 1 MiB uploads")
    assert rss < RSS_LIMIT
    assert _get(exposed.connection(f"unix:{exposed.shared}")) is False  # the get answers
    statuses = _statuses(held)
    assert set(statuses) <= {401, 503} and statuses.count(401) > 250


def test_200_stalled_tls_connections(exposed: Exposed, opened: list[socket.socket]) -> None:
    context = ssl.create_default_context(cafile=str(exposed.cert))

    def tls() -> socket.socket:
        raw = socket.create_connection(("127.0.0.1", exposed.tls_port), timeout=5)
        return context.wrap_socket(raw, server_hostname="127.0.0.1")

    idle = exposed.rss()
    for _ in range(200):  # the first bytes of a ClientHello, then nothing
        sock = socket.create_connection(("127.0.0.1", exposed.tls_port), timeout=5)
        opened.append(sock)
        sock.sendall(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03")
    held = _stall(tls, 200, opened)
    time.sleep(0.5)  # the test: the Hub's memory after a while with them all (no count to poll)
    rss = exposed.rss()
    print(f"\nTLS: RSS {idle / 2**20:.1f} MB idle, {rss / 2**20:.1f} MB after 200 stalled "
          "handshakes and 200 unauthenticated 1 MiB uploads")
    assert rss < RSS_LIMIT
    remote = exposed.connection(f"https://127.0.0.1:{exposed.tls_port}", str(exposed.cert))
    assert _get(remote) is False
    # A TLS client whose send failed (the Hub closed without reading its body) may lose
    # the 401 already sent: after a failed write OpenSSL reports EOF, not the record.
    assert set(_statuses(held)) <= {401, None}
    for token in (None, BOGUS):  # one that sends only the head always reads its 401
        with tls() as sock:
            sock.sendall(_announce(token))
            answers, _rest = parse(read_to_end(sock))
        assert [(a.status, a.code) for a in answers] == [(401, "unauthenticated")]


@pytest.mark.parametrize("mib", [2, 20])
def test_an_oversized_document_is_quota_exceeded(memory_hub: HubProcess, tmp_path: Path,
                                                 mib: int) -> None:
    big = tmp_path / "big.md"
    big.write_text(("z" * 1023 + "\n") * 1024 * mib)
    for _ in range(3):
        code, out, err = amux(memory_hub.home, "memory", "upsert", "big.md",
                              "--expected-revision", "absent", "--file", str(big))
        assert code == 6, (out, err)
        error = out["error"]
        assert (error["code"], error["quota"], error["limit"]) == (
            "quota_exceeded", "request_body_bytes", MAX_BODY_BYTES)
        assert error["actual"] > mib * 2**20
    assert memory_hub.call("/v1/memory/get", {"path": "big.md"})[1]["exists"] is False


def test_an_oversized_document_over_tls_is_quota_exceeded(exposed: Exposed,
                                                          tmp_path: Path) -> None:
    big = tmp_path / "big.md"
    big.write_text("z" * (3 * 2**20))
    config = tmp_path / "remote.json"
    config.write_text(json.dumps({"version": 1, "hub": f"https://127.0.0.1:{exposed.tls_port}",
                                  "token": exposed.hub.owner_token,
                                  "ca_file": str(exposed.cert)}))
    config.chmod(0o600)
    for _ in range(3):
        done = subprocess.run([sys.executable, "-m", "amux.client.cli", "upsert", "big.md",
                               "--expected-revision", "absent", "--file", str(big)],
                              capture_output=True, text=True, timeout=60,
                              env={**os.environ, "AMUX_MEMORY_CONFIG": str(config)})
        assert done.returncode == 6, done.stdout + done.stderr
        assert json.loads(done.stdout)["error"]["quota"] == "request_body_bytes"


def test_a_client_that_never_reads_cannot_hold_a_stopping_hub(memory_hub: HubProcess) -> None:
    content = ("y" * 99 + "\n") * 600  # 60 KB: every get answers a full 8 KiB page
    assert memory_hub.call("/v1/memory/upsert", {"path": "big.md", "content": content,
                                                 "expected_revision": "absent"})[0] == 200
    get = request("/v1/memory/get", {"path": "big.md"}, memory_hub.owner_token)
    with connect(memory_hub.socket_path) as client:
        client.setblocking(False)
        sent = 0
        try:
            while sent < 5000 * len(get):  # megabytes of answers, never read
                sent += client.send(get * 100)
        except BlockingIOError:
            pass
        time.sleep(0.5)  # the Hub fills the socket and holds an unsent answer
        started = time.monotonic()
        memory_hub.process.send_signal(signal.SIGTERM)
        assert memory_hub.process.wait(timeout=STOP_SECONDS) == 0
        print(f"\nstopped in {time.monotonic() - started:.1f} s with an unread answer")


def test_bad_requests_leave_the_log_small(memory_hub: HubProcess) -> None:
    token = memory_hub.owner_token
    deep = (f"POST /v1/memory/get HTTP/1.1\r\nHost: amux-hub\r\nAuthorization: Bearer {token}"
            f"\r\nContent-Length: 100000\r\n\r\n").encode() + b"[" * 100000
    truncated = request("/v1/memory/search", {"query": "x"}, token)[:-2] + b"  "
    unauthenticated = request("/v1/memory/get", {"path": "a.md"}, BOGUS)
    with connect(memory_hub.socket_path) as client:
        for raw in [deep] * 1500 + [truncated] * 300:
            client.sendall(raw)
            answers = read_answers(client, 1)
            assert [(a.status, a.code) for a in answers] == [(400, "invalid_argument")]
    for raw in [unauthenticated] * 100 + [b"POST / HTTP/1.1\r\nContent-Length: +1\r\n\r\n"] * 100:
        with connect(memory_hub.socket_path) as client:
            client.sendall(raw)
            assert parse(read_to_end(client))[0][0].status in (400, 401)
    memory_hub.close()
    memory_hub.process.send_signal(signal.SIGTERM)
    _out, log = memory_hub.process.communicate(timeout=STOP_SECONDS)
    print(f"\nthe Hub's log after 2,000 bad requests: {len(log)} bytes")
    assert len(log) < 4096, log[:2000]

