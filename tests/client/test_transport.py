"""The client transport against a fake server that answers garbage, or answers early."""

from __future__ import annotations

import socket
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from amux.client.connection import Connection
from amux.client.transport import HubClient
from amux.errors import AmuxError


class FakeHub:
    """A Unix socket that reads one request head and answers it with fixed bytes; then it
    closes (or, with `linger`, keeps the connection open without a word more)."""

    def __init__(self, path: str, answer: bytes, *, linger: bool = False) -> None:
        self.listening = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listening.bind(path)
        self.listening.listen(1)
        self.answer, self.linger = answer, linger
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        conn, _ = self.listening.accept()
        with conn:
            head = b""
            while b"\r\n\r\n" not in head:
                head += conn.recv(65536)
            conn.sendall(self.answer)  # and never reads the body
            if self.linger:
                self.done.wait(10)

    def close(self) -> None:
        self.done.set()
        self.thread.join(10)
        self.listening.close()


@pytest.fixture
def socket_path() -> Iterator[str]:
    with tempfile.TemporaryDirectory(prefix="amux-t-", dir="/tmp") as directory:
        yield str(Path(directory) / "fake.sock")


def _call(path: str, answer: bytes, body: dict[str, object] | None = None,
          linger: bool = False) -> AmuxError:
    fake = FakeHub(path, answer, linger=linger)
    try:
        with HubClient(Connection(f"unix:{path}", "amux_tok", None, None, "test"),
                       timeout=20) as client, pytest.raises(AmuxError) as raised:
            client.call("/v1/status", body or {})
    finally:
        fake.close()
    return raised.value


GARBAGE = {
    "not HTTP": (b"garbage\r\n\r\n", "not HTTP"),
    "a bad status code": (b"HTTP/1.1 2OO OK\r\nContent-Length: 2\r\n\r\n{}", "status line"),
    "no status code": (b"HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}", "status line"),
    "a non-numeric length": (b"HTTP/1.1 200 OK\r\nContent-Length: two\r\n\r\n{}",
                             "Content-Length"),
    "a signed length": (b"HTTP/1.1 200 OK\r\nContent-Length: +2\r\n\r\n{}", "Content-Length"),
    "two lengths": (b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}",
                    "Content-Length"),
    "no length": (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n{}",
                  "Content-Length"),
    "chunked": (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
                "Transfer-Encoding"),
    "a header without a colon": (b"HTTP/1.1 200 OK\r\nContent-Length 2\r\n\r\n{}", "header"),
}


@pytest.mark.parametrize(("answer", "named"), GARBAGE.values(), ids=GARBAGE.keys())
def test_a_malformed_answer_is_hub_unreachable(socket_path: str, answer: bytes,
                                               named: str) -> None:
    error = _call(socket_path, answer)
    assert error.code == "hub_unreachable" and error.exit_code == 4
    assert named in error.message and "amux Hub" in error.message


def test_another_service_is_recognised_at_once(socket_path: str) -> None:
    """An SSH server (say) sends a banner and waits: no need to wait for the timeout."""
    started = time.monotonic()
    error = _call(socket_path, b"SSH-2.0-OpenSSH_9.6\r\n", linger=True)
    assert error.code == "hub_unreachable" and "not HTTP" in error.message
    assert "SSH-2.0" in error.message and time.monotonic() - started < 5


def test_an_answer_sent_before_the_body_was_read_is_still_read(socket_path: str) -> None:
    """The Hub refuses an oversized body after its head and stops reading: the client's
    send fails (EPIPE/ECONNRESET), yet the answer is there and it is what counts."""
    refusal = (b'{"error":{"code":"quota_exceeded","message":"too big","quota":'
               b'"request_body_bytes","limit":1048576,"actual":8388700}}')
    answer = (b"HTTP/1.1 413 Payload Too Large\r\nContent-Type: application/json\r\n"
              b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(refusal)) + refusal
    error = _call(socket_path, answer, {"content": "x" * (8 * 2**20)})
    assert (error.code, error.exit_code, error.details["quota"]) == (
        "quota_exceeded", 6, "request_body_bytes")
