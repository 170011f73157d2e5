"""The Hub's event loop: one thread does all socket I/O; slow work goes to a small pool.

Why not a thread per connection (the first version): with 8 busy keep-alive
connections the threads fought over the GIL and `get` throughput fell from
2,560/s (2 connections) to 1,570–1,800/s. Why not an ASGI server: every store
call is blocking file I/O that an event loop must hand to threads anyway, and
the stack adds layers and a dependency to every request. So: one `selectors`
loop accepts, reads, parses and writes for every listener (Unix sockets and
TLS), answers the cheap bounded reads itself (`INLINE_PATHS`), and hands
searches (up to 250 ms of scanning), durable writes (fsync) and administration
to `WORKERS` threads, whose answers come back through a wake-up socket.

Shutdown (`stop`): listeners close at once, idle connections close, requests
already handed to a worker finish and are answered, then the loop returns.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import selectors
import socket
import ssl
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from amux.hub.api import Request, Response
from amux.hub.http import BadRequest, HttpRequest, parse_request, render_response
from amux.memory import wire
from amux.memory.errors import InvalidArgument

log = logging.getLogger("amux.hub")

INLINE_PATHS = frozenset({"/v1/memory/get", "/v1/status", "/v1/binding"})
"""Answered on the loop thread: bounded reads with no lock and no scan."""
WORKERS = 4
IDLE_SECONDS = 30.0
"""An idle keep-alive connection (or a TLS handshake that stalls) is closed after this."""
DRAIN_SECONDS = 30.0
"""How long `stop` waits for requests already in progress."""
_RECV_BYTES = 65536
_SWEEP_SECONDS = 1.0
_READ, _WRITE = selectors.EVENT_READ, selectors.EVENT_WRITE


@dataclass(frozen=True)
class Listener:
    """A bound, listening socket and what arrives on it."""

    sock: socket.socket
    owner: bool
    """The owner's private socket: the only place administration is accepted."""
    tls: ssl.SSLContext | None = None


class _Connection:
    __slots__ = (
        "busy",
        "closing",
        "events",
        "handshaking",
        "inbuf",
        "last_active",
        "listener",
        "outbuf",
        "sock",
    )

    def __init__(self, sock: socket.socket, listener: Listener, now: float) -> None:
        self.sock = sock
        self.listener = listener
        self.inbuf = bytearray()
        self.outbuf = b""
        self.busy = False  # a worker holds its current request
        self.closing = False  # close once outbuf is sent
        self.handshaking = listener.tls is not None
        self.last_active = now
        self.events = 0  # what the selector watches for it


class EventLoop:
    """Serve `listeners` with `handle` until `stop()`."""

    def __init__(self, handle: Callable[[Request], Response], listeners: list[Listener],
                 *, workers: int = WORKERS, idle_seconds: float = IDLE_SECONDS) -> None:
        self._handle = handle
        self._listeners = listeners
        self._idle = idle_seconds
        self._selector = selectors.DefaultSelector()
        self._pool = ThreadPoolExecutor(workers, thread_name_prefix="amux-hub-worker")
        self._done: deque[tuple[_Connection, HttpRequest, Response]] = deque()
        self._connections: set[_Connection] = set()
        self._wake_read, self._wake_write = socket.socketpair()
        for end in (self._wake_read, self._wake_write):
            end.setblocking(False)
        self._stopping = threading.Event()
        self._paused: list[Listener] = []

    def wake(self) -> None:
        """Make `run` look at its flags now; safe from other threads and signal handlers."""
        with contextlib.suppress(BlockingIOError, OSError):  # already awake, or closed
            self._wake_write.send(b"\0")

    def stop(self) -> None:
        self._stopping.set()
        self.wake()

    def run(self, tick: Callable[[], None] = lambda: None) -> None:
        """Serve until stopped; `tick` runs on every pass (the Hub's reload check)."""
        self._selector.register(self._wake_read, _READ, None)
        for listener in self._listeners:
            listener.sock.setblocking(False)
            self._selector.register(listener.sock, _READ, listener)
        try:
            self._serve(tick)
            self._drain()
        finally:
            self._pool.shutdown(wait=True)  # a write that was started always finishes
            for connection in list(self._connections):
                self._close(connection)
            self._selector.close()
            self._wake_read.close()
            self._wake_write.close()

    def _serve(self, tick: Callable[[], None]) -> None:
        last_sweep = time.monotonic()
        while not self._stopping.is_set():
            self._pass(_SWEEP_SECONDS)
            tick()
            now = time.monotonic()
            if now - last_sweep >= _SWEEP_SECONDS:
                last_sweep = now
                self._sweep(now)

    def _drain(self) -> None:
        for listener in self._listeners:
            if listener not in self._paused:
                self._selector.unregister(listener.sock)
        deadline = time.monotonic() + DRAIN_SECONDS
        while time.monotonic() < deadline:
            for connection in list(self._connections):
                if not connection.busy and not connection.outbuf:
                    self._close(connection)
            if not self._connections:
                return
            self._pass(0.2)

    def _pass(self, timeout: float) -> None:
        for key, _events in self._selector.select(timeout):
            target = key.data
            if target is None:
                self._finish_work()
            elif isinstance(target, Listener):
                self._accept(target)
            else:
                self._step(target)

    # -- connections ---------------------------------------------------------------

    def _accept(self, listener: Listener) -> None:
        for _ in range(64):  # then let the others have a turn
            try:
                sock, _address = listener.sock.accept()
            except BlockingIOError:
                return
            except OSError as error:
                if error.errno in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM):
                    log.warning("not accepting connections for a moment: %s", error.strerror)
                    self._selector.unregister(listener.sock)
                    self._paused.append(listener)  # the next sweep listens again
                    return
                continue  # the peer went away between connect and accept
            sock.setblocking(False)
            if listener.tls is not None:
                try:
                    sock = listener.tls.wrap_socket(sock, server_side=True,
                                                    do_handshake_on_connect=False)
                except (OSError, ValueError):
                    sock.close()
                    continue
            connection = _Connection(sock, listener, time.monotonic())
            self._connections.add(connection)
            self._step(connection)

    def _step(self, connection: _Connection) -> None:
        """Move one connection as far as it goes without blocking."""
        sock = connection.sock
        try:
            if connection.handshaking:
                assert isinstance(sock, ssl.SSLSocket)
                sock.do_handshake()
                connection.handshaking = False
            while True:
                if connection.outbuf:
                    sent = sock.send(connection.outbuf)
                    connection.outbuf = connection.outbuf[sent:]
                    connection.last_active = time.monotonic()
                    continue
                if connection.closing or (self._stopping.is_set() and not connection.busy):
                    self._close(connection)
                    return
                if connection.busy:
                    self._watch(connection, 0)
                    return
                parsed = parse_request(connection.inbuf)
                if parsed is not None:
                    request, size = parsed
                    del connection.inbuf[:size]
                    self._dispatch(connection, request)
                    continue
                data = sock.recv(_RECV_BYTES)
                if not data:
                    self._close(connection)
                    return
                connection.inbuf += data
                connection.last_active = time.monotonic()
        except ssl.SSLWantReadError:
            self._watch(connection, _READ)
        except ssl.SSLWantWriteError:
            self._watch(connection, _WRITE)
        except BlockingIOError:
            self._watch(connection, _WRITE if connection.outbuf else _READ)
        except BadRequest as problem:
            error = InvalidArgument(f"bad HTTP request: {problem}")
            connection.outbuf = render_response(error.http_status or 400,
                                                wire.encode(error.to_wire()), close=True)
            connection.inbuf.clear()
            connection.closing = True
            self._step(connection)
        except OSError:  # reset by the peer, a failed handshake: nothing to answer
            self._close(connection)

    def _dispatch(self, connection: _Connection, http: HttpRequest) -> None:
        request = Request(http.method, http.path, http.body, http.token, http.binding,
                          connection.listener.owner)
        if http.path in INLINE_PATHS:
            self._answer(connection, http, self._handle(request))
            return
        connection.busy = True
        self._pool.submit(self._work, connection, http, request)

    def _work(self, connection: _Connection, http: HttpRequest, request: Request) -> None:
        """On a worker thread: answer, then hand the response back to the loop."""
        self._done.append((connection, http, self._handle(request)))
        self.wake()

    def _finish_work(self) -> None:
        with contextlib.suppress(BlockingIOError):
            while self._wake_read.recv(4096):
                pass
        while self._done:
            connection, http, response = self._done.popleft()
            connection.busy = False
            if connection in self._connections:
                self._answer(connection, http, response)
                self._step(connection)

    def _answer(self, connection: _Connection, http: HttpRequest, response: Response) -> None:
        log.debug("%s %s -> %d", http.method, http.path, response.status)  # never bodies
        connection.outbuf = render_response(response.status, response.body,
                                            close=not http.keep_alive)
        connection.closing = not http.keep_alive

    def _watch(self, connection: _Connection, events: int) -> None:
        if events == connection.events:
            return
        if connection.events == 0:
            self._selector.register(connection.sock, events, connection)
        elif events == 0:
            self._selector.unregister(connection.sock)
        else:
            self._selector.modify(connection.sock, events, connection)
        connection.events = events

    def _close(self, connection: _Connection) -> None:
        self._watch(connection, 0)
        self._connections.discard(connection)
        with contextlib.suppress(OSError):
            connection.sock.close()

    def _sweep(self, now: float) -> None:
        """Close idle connections; listen again where accepting was paused."""
        for connection in list(self._connections):
            if not connection.busy and now - connection.last_active > self._idle:
                self._close(connection)
        for listener in self._paused:
            self._selector.register(listener.sock, _READ, listener)
        self._paused.clear()
