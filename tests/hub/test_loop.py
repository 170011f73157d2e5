"""The Hub's event loop in-process: real HubApi, store and Unix socket; timing made small."""

from __future__ import annotations

import io
import logging
import socket
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from amux.hub.api import HubApi, Request, Response
from amux.hub.config import ConfigFile
from amux.hub.identities import Registry
from amux.hub.loop import EventLoop, Listener, RepeatLimit
from amux.memory import Store
from tests.hub import rawhttp


class Served:
    """An EventLoop on a temp Unix socket, running in a thread, over a real HubApi."""

    def __init__(self, directory: Path, wrap: Callable[[Request], None] | None = None,
                 idle_seconds: float = 30.0, head_seconds: float = 10.0) -> None:
        config = ConfigFile(directory)
        config.set("memory.enabled", "true")
        registry = Registry(directory)
        issued = registry.ensure_owner("owner")
        assert issued is not None
        self.token = issued.token
        self.store = Store(directory / "memory")
        api = HubApi(self.store, registry, config)

        def handle(request: Request) -> Response:
            if wrap is not None:
                wrap(request)
            return api.handle(request)

        self.path = str(directory / "s.sock")
        self.listening = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listening.bind(self.path)
        self.listening.listen(16)
        self.loop = EventLoop(handle, [Listener(self.listening, owner=True)],
                              preflight=api.preflight, idle_seconds=idle_seconds,
                              head_seconds=head_seconds)
        self.thread = threading.Thread(target=self.loop.run)
        self.thread.start()

    def request(self, path: str, body: object) -> bytes:
        return rawhttp.request(path, body, self.token)

    def connect(self) -> socket.socket:
        return rawhttp.connect(self.path)

    def stop(self) -> None:
        self.loop.stop()
        self.joined()

    def joined(self) -> None:
        self.thread.join(timeout=30)
        assert not self.thread.is_alive()
        self.listening.close()  # the Hub closes its listeners after the loop returns
        self.store.close()


@pytest.fixture
def directory() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="amux-loop-", dir="/tmp") as name:
        yield Path(name)


def read_responses(client: socket.socket, count: int) -> list[tuple[int, dict[str, object]]]:
    """`count` responses off one connection, in order: (status, body)."""
    return [(answer.status, answer.body) for answer in rawhttp.read_answers(client, count)]


def test_pipelined_requests_are_answered_in_order(directory: Path) -> None:
    served = Served(directory)
    try:
        with served.connect() as client:
            # A worker request (upsert, search) between inline ones (get) keeps its place.
            client.sendall(
                served.request("/v1/memory/get", {"path": "a.md"})
                + served.request("/v1/memory/upsert", {"path": "a.md", "content": "one\n",
                                                       "expected_revision": "absent"})
                + served.request("/v1/memory/get", {"path": "a.md"})
                + served.request("/v1/memory/search", {"query": "one"})
                + served.request("/v1/status", {})
            )
            answers = read_responses(client, 5)
        assert [status for status, _ in answers] == [200, 200, 200, 200, 400]
        assert answers[0][1]["exists"] is False
        assert answers[2][1]["content"] == "one\n"
        assert [hit["path"] for hit in answers[3][1]["results"]] == ["a.md"]  # type: ignore[union-attr]
    finally:
        served.stop()


def test_a_dribbling_client_does_not_hold_up_others(directory: Path) -> None:
    served = Served(directory)
    try:
        raw = served.request("/v1/memory/get", {"path": "a.md"})
        with served.connect() as slow, served.connect() as quick:
            for index, byte in enumerate(raw[:-1]):
                slow.sendall(bytes([byte]))
                if index % 20 == 0:
                    quick.sendall(raw)
                    assert read_responses(quick, 1)[0][0] == 200
            slow.sendall(raw[-1:])
            assert read_responses(slow, 1)[0][0] == 200
    finally:
        served.stop()


def test_idle_connections_are_closed(directory: Path) -> None:
    served = Served(directory, idle_seconds=0.3)
    try:
        with served.connect() as client:
            started = time.monotonic()
            assert client.recv(1) == b""  # closed by the Hub, not by a timeout here
            assert 0.2 < time.monotonic() - started < 5
    finally:
        served.stop()


def test_stop_finishes_a_write_in_progress(directory: Path) -> None:
    entered, release = threading.Event(), threading.Event()

    def hold_writes(request: Request) -> None:
        if request.path.endswith("/upsert"):
            entered.set()
            release.wait(10)

    served = Served(directory, wrap=hold_writes)
    with served.connect() as client, served.connect() as idle:
        client.sendall(served.request("/v1/memory/upsert", {
            "path": "kept.md", "content": "kept\n", "expected_revision": "absent"}))
        assert entered.wait(10)
        served.loop.stop()
        assert idle.recv(1) == b""  # the idle connection is closed at once
        release.set()
        assert read_responses(client, 1)[0][0] == 200  # the write still gets its answer
        assert client.recv(1) == b""
    served.joined()
    assert (directory / "memory" / "global" / "kept.md").read_text() == "kept\n"


def test_a_head_must_complete_in_time_even_when_dribbled(directory: Path) -> None:
    """Never idle, never complete: the head deadline closes it, not the idle timeout."""
    served = Served(directory, idle_seconds=30, head_seconds=0.5)
    try:
        with served.connect() as client:
            started = time.monotonic()
            client.sendall(b"POST /v1/status HTTP/1.1\r\n")
            with pytest.raises(OSError):  # EPIPE or a reset once the Hub closed it
                for _ in range(100):
                    time.sleep(0.05)
                    client.sendall(b"X-Pad: p\r\n")
            assert 0.4 < time.monotonic() - started < 4
    finally:
        served.stop()


def test_a_body_arriving_later_is_read_once_the_head_passed(directory: Path) -> None:
    served = Served(directory)
    try:
        raw = served.request("/v1/memory/upsert", {"path": "late.md", "content": "late\n",
                                                   "expected_revision": "absent"})
        head_end = raw.index(b"\r\n\r\n") + 4
        with served.connect() as client:
            client.sendall(raw[:head_end])
            time.sleep(0.2)  # the test: the body comes later than its head
            client.sendall(raw[head_end:])
            assert read_responses(client, 1)[0][0] == 200
    finally:
        served.stop()


def test_repeated_log_records_are_limited() -> None:
    now = [0.0]
    stream = io.StringIO()
    logger = logging.getLogger("amux.hub.test-repeat-limit")
    handler = logging.StreamHandler(stream)
    logger.addHandler(handler)
    logger.addFilter(RepeatLimit(burst=5, window=60, clock=lambda: now[0]))
    logger.propagate = False
    try:
        for index in range(2000):
            try:
                raise ValueError(index)
            except ValueError:
                logger.exception("internal error on %s %s", "POST", f"/v1/x/{index}")
            logger.warning("another kind of message")
        now[0] = 61.0
        logger.error("internal error on %s %s", "POST", "/v1/later")
    finally:
        logger.removeHandler(handler)
    lines = stream.getvalue().splitlines()
    assert sum("internal error on POST /v1/x/" in line for line in lines) == 5
    assert sum(line == "another kind of message" for line in lines) == 5
    assert sum("suppressing messages like" in line for line in lines) == 2
    assert lines[-1] == "internal error on POST /v1/later [1995 similar messages suppressed]"
    assert len(stream.getvalue()) < 6000  # five tracebacks, not two thousand
    assert any(isinstance(f, RepeatLimit) for f in logging.getLogger("amux.hub").filters)
