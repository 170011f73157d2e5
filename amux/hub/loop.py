"""The Hub's event loop: one thread does all socket I/O; slow work goes to a small pool.

Why not a thread per connection (the first version): with 8 busy keep-alive
connections the threads fought over the GIL and `get` throughput fell from
2,560/s (2 connections) to 1,570–1,800/s. Why not an ASGI server: every store
call is blocking file I/O that an event loop must hand to threads anyway, and
the stack adds layers and a dependency to every request. So: one `selectors`
loop accepts, reads, frames (`amux.hub.http`) and writes for every listener
(Unix sockets and TLS), answers the cheap bounded reads itself
(`INLINE_PATHS`), and hands searches (up to 250 ms of scanning, most of it in the
search process: `amux.hub.searcher`), durable writes (fsync) and administration to
`WORKERS` threads, whose answers come back through a wake-up socket.

Before a request's head is complete and its token checked (`preflight`), a
connection is a stranger's: it may hold at most a head, only for
`HEAD_SECONDS`, and all strangers together at most `UNAUTHENTICATED_BYTES`;
each listener holds at most `max_connections` (its share of the file-descriptor limit:
`connection_cap`; a flood on one listener does not starve another), a TLS
listener at most `MAX_HANDSHAKES` handshakes at a time.
Over the cap a connection is answered `hub_busy` (after its TLS handshake), its
request read and dropped so the client reads that answer rather than a reset, and
closed; at most `REFUSING_MAX` are being refused at once, the rest are closed at
accept. The owner's socket keeps `OWNER_RESERVE` more for administration only, so
a Hub full of sessions never locks out its owner (docs/hub.md "Capacity").

Shutdown (`stop`): listeners close at once, idle connections close, requests
already handed to a worker finish and are answered; after `DRAIN_SECONDS`
every connection is closed, whether or not its client read its answer.
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
from dataclasses import dataclass, field

from amux.errors import AmuxError, HubBusy, QuotaExceeded
from amux.hub.api import Request, Response
from amux.hub.http import (
    MAX_BODY_BYTES,
    MAX_HEAD_BYTES,
    Head,
    RequestReader,
    render_error,
    render_response,
)
from amux.hub.paths import DRAIN_SECONDS

log = logging.getLogger("amux.hub")

INLINE_PATHS = frozenset({"/v1/memory/get", "/v1/status", "/v1/binding"})
"""Answered on the loop thread: bounded reads with no lock and no scan."""
WORKERS = 4
IDLE_SECONDS = 30.0
"""A keep-alive connection with no request in progress is closed after this."""
HEAD_SECONDS = 10.0
"""From accepting (TLS handshake included), or from a later request's first byte, until
its head is complete: a client dribbling a head cannot keep a connection for long."""
MAX_CONNECTIONS = 256
"""The cap when none is given (`EventLoop`); the Hub derives its own (`connection_cap`)."""
CONNECTIONS_CEILING = 16_384
"""The most a Hub holds however many descriptors it may open (each costs ~2 KB, more
with TLS)."""
FD_RESERVE = 128
"""Descriptors kept for what is not a connection: documents, history packs, the log."""
OWNER_RESERVE = 16
"""Connections the owner's socket takes past the cap, for `ADMIN_PATHS` only."""
RESERVED_HEAD_SECONDS = 2.0
"""A reserved connection's head must come sooner: one that sends nothing frees its slot."""
ADMIN_PATHS = ("/v1/status", "/v1/admin/")
"""What a reserved connection may ask (a prefix or an exact path)."""
REFUSING_MAX = 64
"""Connections being refused at once per listener (TLS handshake, answer, the request
read)."""
MAX_HANDSHAKES = 64
"""TLS handshakes in progress per listener. At the cap a new connection waits in the
backlog, unless the oldest handshake is older than `HANDSHAKE_GRACE_SECONDS`: that one
is closed (a stalled handshake cannot lock out those that complete)."""
HANDSHAKE_GRACE_SECONDS = 1.0
UNAUTHENTICATED_BYTES = 4 * 1024 * 1024
"""Received bytes of heads not yet complete, over all connections."""
DISCARD_BYTES = 64 * 1024 * 1024
DISCARD_SECONDS = 10.0
"""After a 413 for an authenticated request's oversized body, read and drop up to this
much of it, for up to this long, so the client sees the answer, not a broken pipe."""
REFUSED_DISCARD_BYTES = 64 * 1024
REFUSED_DISCARD_SECONDS = 2.0
"""The same after refusing a head (no valid token): enough for a client that writes head
and body separately (`http.client`) to read its 401, too little to be worth sending."""
REGULAR, RESERVED, REFUSED = "regular", "reserved", "refused"
"""How a connection was taken: under the cap, in the owner's reserve, to be refused."""
_RECV_BYTES = 65536
_SWEEP_SECONDS = 1.0
_READ, _WRITE = selectors.EVENT_READ, selectors.EVENT_WRITE


def connection_cap(listeners: int) -> int:
    """The connections each of `listeners` takes: the descriptor limit, first raised to
    the hard limit where the soft one is lower (as servers do at start), less
    `FD_RESERVE`, shared out, at most `CONNECTIONS_CEILING` in all."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = CONNECTIONS_CEILING + FD_RESERVE
    if soft != resource.RLIM_INFINITY and soft < wanted:
        raised = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
        if raised > soft:
            try:
                resource.setrlimit(resource.RLIMIT_NOFILE, (raised, hard))
                soft = raised
            except (OSError, ValueError) as error:  # e.g. macOS's OPEN_MAX
                log.warning("could not raise the open-file limit from %d to %d: %s",
                            soft, raised, error)
    usable = CONNECTIONS_CEILING if soft == resource.RLIM_INFINITY else min(
        CONNECTIONS_CEILING, soft - FD_RESERVE - listeners * (OWNER_RESERVE + REFUSING_MAX))
    return max(16, usable // max(1, listeners))


@dataclass(frozen=True)
class Listener:
    """A bound, listening socket and what arrives on it."""

    sock: socket.socket
    owner: bool
    """The owner's private socket: the only place administration is accepted."""
    tls: ssl.SSLContext | None = None


@dataclass
class _Load:
    """What one listener holds now, against its caps."""

    held: dict[str, int] = field(default_factory=lambda: dict.fromkeys(
        (REGULAR, RESERVED, REFUSED), 0))
    """Connections by how they were taken."""
    handshakes: dict[_Connection, None] = field(default_factory=dict)
    """In accept order, so the oldest is first."""



class _Connection:
    __slots__ = (
        "busy",
        "closing",
        "deadline",
        "discard",
        "events",
        "handshaking",
        "head",
        "kind",
        "last_active",
        "listener",
        "load",
        "outbuf",
        "reader",
        "sock",
        "strange",
    )

    def __init__(self, sock: socket.socket, listener: Listener, load: _Load, now: float,
                 deadline: float, kind: str = REGULAR) -> None:
        self.sock = sock
        self.kind = kind
        self.listener = listener
        self.load = load
        self.handshaking = listener.tls is not None
        self.reader = RequestReader()
        self.head: Head | None = None  # accepted by preflight; its body is being read
        self.outbuf = b""
        self.busy = False  # a worker holds its current request
        self.closing = False  # close once outbuf is sent (and `discard` bytes are dropped)
        self.discard = 0
        self.strange = 0  # bytes received of a head not yet complete
        self.last_active = now
        self.deadline: float | None = deadline  # for the handshake and the first head
        self.events = 0  # what the selector watches for it


class EventLoop:
    """Serve `listeners` with `handle` until `stop()`; `preflight` may refuse a request on
    its head (a `Request` without its body) before the body is read."""

    def __init__(self, handle: Callable[[Request], Response], listeners: list[Listener],
                 *, preflight: Callable[[Request], Response | None],
                 workers: int = WORKERS, idle_seconds: float = IDLE_SECONDS,
                 head_seconds: float = HEAD_SECONDS,
                 max_connections: int = MAX_CONNECTIONS) -> None:
        self.max_connections = max_connections
        """Per listener."""
        self._handle = handle
        self._preflight = preflight
        self._listeners = listeners
        self._loads = {listener: _Load() for listener in listeners}
        self._idle = idle_seconds
        self._head_seconds = head_seconds
        self._strange = 0  # bytes of incomplete heads, over all connections
        self._scratch = bytearray(_RECV_BYTES)  # where discarded bodies go
        self._selector = selectors.DefaultSelector()
        self._pool = ThreadPoolExecutor(workers, thread_name_prefix="amux-hub-worker")
        self._done: deque[tuple[_Connection, Request, bool, Response]] = deque()
        self._connections: set[_Connection] = set()
        self._wake_read, self._wake_write = socket.socketpair()
        for end in (self._wake_read, self._wake_write):
            end.setblocking(False)
        self._stopping = threading.Event()
        self._paused: list[Listener] = []

    def load(self) -> list[dict[str, int]]:
        """Per listener, in order: connections held now by how they were taken, and the
        cap (`hub status`)."""
        return [{"held": load.held[REGULAR], "max": self.max_connections,
                 "reserve_held": load.held[RESERVED], "refusing": load.held[REFUSED]}
                for load in self._loads.values()]

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
        load = self._loads[listener]
        for _ in range(64):  # then let the others have a turn
            if listener.tls is not None and len(load.handshakes) >= MAX_HANDSHAKES:
                oldest = next(iter(load.handshakes))
                if time.monotonic() - oldest.last_active < HANDSHAKE_GRACE_SECONDS:
                    # A burst of clients, not a stall: the rest wait in the backlog until
                    # a handshake completes (`_step` listens again), none is reset.
                    self._pause(listener)
                    return
                self._close(oldest)  # stalled: it must not lock out those that complete
            try:
                sock, _address = listener.sock.accept()
            except BlockingIOError:
                return
            except OSError as error:
                if error.errno in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM):
                    log.warning("not accepting connections for a moment: %s", error.strerror)
                    self._pause(listener)  # the next sweep listens again
                    return
                continue  # the peer went away between connect and accept
            sock.setblocking(False)
            kind = self._kind(listener, load)
            if kind is None:  # a flood: no descriptor is held for the refusal
                self._turn_away(sock, listener)
                continue
            if listener.tls is not None:
                try:
                    sock = listener.tls.wrap_socket(sock, server_side=True,
                                                    do_handshake_on_connect=False)
                except (OSError, ValueError):
                    sock.close()
                    continue
            now = time.monotonic()
            head_deadline = now + (min(self._head_seconds, RESERVED_HEAD_SECONDS)
                                   if kind == RESERVED else self._head_seconds)
            connection = _Connection(sock, listener, load, now, head_deadline, kind)
            self._connections.add(connection)
            load.held[kind] += 1
            if connection.handshaking:
                load.handshakes[connection] = None
            if kind == REFUSED:
                self._refuse(connection, self._busy())
                self._discard(connection, REFUSED_DISCARD_BYTES, REFUSED_DISCARD_BYTES,
                              REFUSED_DISCARD_SECONDS)
            self._step(connection)

    def _pause(self, listener: Listener) -> None:
        if listener not in self._paused:
            self._selector.unregister(listener.sock)
            self._paused.append(listener)

    def _resume(self, listener: Listener) -> None:
        if listener in self._paused and not self._stopping.is_set():
            self._paused.remove(listener)
            self._selector.register(listener.sock, _READ, listener)

    def _turn_away(self, sock: socket.socket, listener: Listener) -> None:
        """Refuse at once: `hub_busy`, and what the request sent already is read, so the
        close does not reset it (over TLS nothing can be said before a handshake)."""
        with contextlib.suppress(OSError):
            if listener.tls is None:
                sock.send(self._busy())
                sock.recv_into(self._scratch)  # one read at most: this is a flood
        sock.close()

    def _busy(self) -> bytes:
        return render_error(HubBusy(
            f"the Hub holds its limit of {self.max_connections} connections on this socket: "
            "retry in a moment (amux clients retry by themselves)"))

    def _kind(self, listener: Listener, load: _Load) -> str | None:
        """How to take a new connection on `listener`; None: close it unanswered."""
        if load.held[REGULAR] < self.max_connections:
            return REGULAR
        if listener.owner and load.held[RESERVED] < OWNER_RESERVE:
            return RESERVED
        if load.held[REFUSED] < REFUSING_MAX:
            return REFUSED
        return None

    def _step(self, connection: _Connection) -> None:
        """Move one connection as far as it goes without blocking."""
        sock = connection.sock
        try:
            if connection.handshaking:
                assert isinstance(sock, ssl.SSLSocket)
                sock.do_handshake()
                connection.handshaking = False
                del connection.load.handshakes[connection]
                self._resume(connection.listener)
            while True:
                if connection.outbuf:
                    sent = sock.send(connection.outbuf)
                    connection.outbuf = connection.outbuf[sent:]
                    connection.last_active = time.monotonic()
                    continue
                if connection.discard > 0:
                    dropped = sock.recv_into(self._scratch,
                                             min(len(self._scratch), connection.discard))
                    connection.discard = connection.discard - dropped if dropped else 0
                    continue
                if connection.closing or (self._stopping.is_set() and not connection.busy):
                    self._close(connection)
                    return
                if connection.busy:
                    self._watch(connection, 0)
                    return
                if self._advance(connection):
                    continue
                if not self._receive(connection):
                    self._close(connection)
                    return
        except ssl.SSLWantReadError:
            self._watch(connection, _READ)
        except ssl.SSLWantWriteError:
            self._watch(connection, _WRITE)
        except BlockingIOError:
            self._watch(connection, _WRITE if connection.outbuf else _READ)
        except AmuxError as error:  # malformed, over a limit, or the Hub is full: say so
            self._refuse(connection, render_error(error))
            self._step(connection)
        except OSError:  # reset by the peer, a failed handshake: nothing to answer
            self._close(connection)

    def _receive(self, connection: _Connection) -> bool:
        """Read what the connection's state allows; False once the peer closed."""
        if connection.head is not None:  # an authenticated body
            data = connection.sock.recv(_RECV_BYTES)
        else:  # a stranger's head: never more than the head limit
            data = connection.sock.recv(max(1, MAX_HEAD_BYTES + 1 - connection.strange))
            if connection.deadline is None:  # the first byte of a later request
                connection.deadline = time.monotonic() + self._head_seconds
            connection.strange += len(data)
            self._strange += len(data)
            if self._strange > UNAUTHENTICATED_BYTES:
                raise HubBusy("the Hub holds its limit of unauthenticated request bytes from "
                              "other connections: retry in a moment")
        if not data:
            return False
        connection.last_active = time.monotonic()
        connection.reader.feed(data)
        return True

    def _advance(self, connection: _Connection) -> bool:
        """Act on what was received: a complete head is checked and then a complete
        request dispatched. False when more bytes are needed first."""
        reader = connection.reader
        head = connection.head
        if head is None:
            head = reader.next_head()
            if head is None:
                return False
            self._settle(connection)
            connection.deadline = None
            refusal = self._preflight(Request(head.method, head.path, b"", head.token,
                                              head.binding, connection.listener.owner))
            unread = head.length - reader.buffered
            if refusal is None and connection.kind == RESERVED and not (
                    head.path == ADMIN_PATHS[0] or head.path.startswith(ADMIN_PATHS[1])):
                self._refuse(connection, render_error(HubBusy(
                    f"the Hub holds its limit of {self.max_connections} connections here; the "
                    "owner's reserve is for administration (amux hub status, amux system …):"
                    " retry in a moment (amux clients retry by themselves)")))
                self._discard(connection, unread, REFUSED_DISCARD_BYTES,
                              REFUSED_DISCARD_SECONDS)
            elif refusal is not None:
                self._refuse(connection, render_response(refusal.status, refusal.body,
                                                         close=True))
                self._discard(connection, unread, REFUSED_DISCARD_BYTES,
                              REFUSED_DISCARD_SECONDS)
            elif head.length > MAX_BODY_BYTES:
                self._refuse(connection, render_error(QuotaExceeded(
                    "request_body_bytes", MAX_BODY_BYTES, head.length,
                    f"the request body is {head.length} bytes; the Hub takes at most "
                    f"{MAX_BODY_BYTES} (a topic document holds at most 64 KiB): split it")))
                self._discard(connection, unread, DISCARD_BYTES, DISCARD_SECONDS)
            else:
                connection.head = head
            return True
        whole = reader.next_body()
        if whole is None:
            return False
        body, keep_alive = whole
        keep_alive = keep_alive and connection.kind != RESERVED  # one answer, then the slot frees
        connection.head = None
        request = Request(head.method, head.path, body, head.token, head.binding,
                          connection.listener.owner)
        if request.path in INLINE_PATHS:
            self._answer(connection, request, keep_alive, self._handle(request))
        else:
            connection.busy = True
            self._pool.submit(self._work, connection, request, keep_alive)
        return True

    def _work(self, connection: _Connection, request: Request, keep_alive: bool) -> None:
        """On a worker thread: answer, then hand the response back to the loop."""
        self._done.append((connection, request, keep_alive, self._handle(request)))
        self.wake()

    def _finish_work(self) -> None:
        with contextlib.suppress(BlockingIOError):
            while self._wake_read.recv(4096):
                pass
        while self._done:
            connection, request, keep_alive, response = self._done.popleft()
            connection.busy = False
            if connection in self._connections:
                self._answer(connection, request, keep_alive, response)
                self._step(connection)

    def _answer(self, connection: _Connection, request: Request, keep_alive: bool,
                response: Response) -> None:
        log.debug("%s %s -> %d", request.method, request.path, response.status)  # never bodies
        connection.outbuf = render_response(response.status, response.body,
                                            close=not keep_alive)
        connection.closing = not keep_alive

    def _refuse(self, connection: _Connection, answer: bytes) -> None:
        """Answer without reading further, then close."""
        connection.outbuf = answer
        connection.closing = True
        connection.head = None

    def _discard(self, connection: _Connection, unread: int, limit: int,
                 seconds: float) -> None:
        """Before closing, read and drop up to `limit` of the `unread` body bytes, for at
        most `seconds`: closing on unread bytes resets the connection, and the client may
        lose the answer while it is still sending."""
        connection.discard = max(0, min(unread, limit))
        connection.deadline = time.monotonic() + seconds

    def _settle(self, connection: _Connection) -> None:
        """The connection's head is complete (or it closes): its bytes are no stranger's."""
        self._strange -= connection.strange
        connection.strange = 0

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
        if connection not in self._connections:
            return
        self._watch(connection, 0)
        self._connections.discard(connection)
        connection.load.held[connection.kind] -= 1
        if connection.load.handshakes.pop(connection, 0) is None:  # one was in progress
            self._resume(connection.listener)
        self._settle(connection)
        with contextlib.suppress(OSError):
            connection.sock.close()

    def _sweep(self, now: float) -> None:
        """Close idle connections and those past their deadline; listen again where
        accepting was paused."""
        for connection in list(self._connections):
            if connection.busy:
                continue
            if (now - connection.last_active > self._idle
                    or (connection.deadline is not None and now > connection.deadline)):
                self._close(connection)
        for listener in self._paused:
            self._selector.register(listener.sock, _READ, listener)
        self._paused.clear()


@dataclass
class _Kind:
    """Records of one kind in the current window."""

    start: float
    passed: int = 1
    dropped: int = 0


class RepeatLimit(logging.Filter):
    """At most `burst` records of one kind (message template and level) per `window`
    seconds. The first one dropped becomes a one-line notice; the first one let through
    after the window says how many were dropped.

    Peers decide much of what the Hub logs (a request that trips a bug, a flood that
    exhausts file descriptors); unlimited, each would add a line or a traceback.
    """

    _MAX_KINDS = 256

    def __init__(self, burst: int = 5, window: float = 60.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self._burst, self._window, self._clock = burst, window, clock
        self._kinds: dict[tuple[object, int], _Kind] = {}
        self._lock = threading.Lock()

    def filter(self, record: logging.LogRecord) -> bool:
        key = (record.msg, record.levelno)
        now = self._clock()
        with self._lock:
            kind = self._kinds.get(key)
            if kind is None or now - kind.start >= self._window:
                if len(self._kinds) >= self._MAX_KINDS:  # messages formatted by the caller
                    self._kinds = {k: v for k, v in self._kinds.items()
                                   if now - v.start < self._window}
                self._kinds[key] = _Kind(now)
                if kind is not None and kind.dropped:
                    record.msg = f"{record.msg} [{kind.dropped} similar messages suppressed]"
                return True
            if kind.passed < self._burst:
                kind.passed += 1
                return True
            kind.dropped += 1
            if kind.dropped > 1:
                return False
            left = self._window - (now - kind.start)
        record.msg, record.args = "suppressing messages like %r for %.0f s", (record.msg, left)
        record.exc_info, record.exc_text = None, None
        return True


log.addFilter(RepeatLimit())
