"""The Hub process: HTTP/1.1 JSON on the owner's Unix socket (SPEC §4).

Why the standard library's `socketserver` rather than an ASGI
stack: every store operation is blocking file I/O with fsync, which an event loop
would hand to a thread pool anyway; one thread per connection (keep-alive) gives
the same concurrency with no dependency, no executor hop and a simple, testable
shutdown: stop accepting, wake idle connections, let in-flight requests finish,
remove the socket and pid file. The Hub's request logic lives in `api.HubApi`,
so swapping the server later touches only this module.

Layout under `<AMUX_HOME>`: `run/` (0700) holds `hub.sock` (or a short fallback
path when that is too long for a Unix socket) and `hub.pid`; `credentials/owner.json`
(0600) is the owner's connection config (SPEC Appendix A), created on first start.

With `listeners.shared_socket` set, a second socket (mode 0666, in a directory
created 0755) serves isolated runs: every request there still needs a token, and
administration is refused there. Listener changes apply when the Hub restarts.
With `listeners.tls_address` (plus `tls_cert`/`tls_key`), a TLS TCP listener
serves remote Runtimes the same way (tokens required, no administration).
"""

from __future__ import annotations

import contextlib
import getpass
import json
import logging
import os
import signal
import socket
import socketserver
import stat
import sys
import threading
from http import HTTPStatus
from pathlib import Path
from types import FrameType
from typing import Any, cast

from amux import __version__
from amux.hub.api import HubApi, Request
from amux.hub.config import ConfigFile
from amux.hub.identities import Registry
from amux.hub.paths import owner_socket_path, pid_path
from amux.memory import wire
from amux.memory.errors import AmuxError, InvalidArgument
from amux.memory.fs import write_file_atomic
from amux.memory.store import Store

log = logging.getLogger("amux.hub")

MAX_BODY_BYTES = 1024 * 1024
"""A 64 KiB document JSON-escaped stays far below this; anything larger is refused."""
IDLE_SECONDS = 30.0
"""An idle keep-alive connection is closed after this long."""
_MAX_LINE = 8192
_MAX_HEADERS = 64


class _BadRequest(Exception):
    """The bytes on the connection are not an HTTP/1.x request we can answer."""


class _Handler(socketserver.StreamRequestHandler):
    """A lean HTTP/1.1 keep-alive loop: request line, headers, Content-Length body.

    `http.server.BaseHTTPRequestHandler` parses headers with the `email` package,
    which cost more per request than the store's own work; the Hub's requests
    are small JSON POSTs from known clients, so a strict minimal parser does.
    """

    timeout = IDLE_SECONDS

    @property
    def hub(self) -> _Serving:
        return cast(_Serving, self.server)

    def setup(self) -> None:
        super().setup()
        self.hub.track(self.connection, add=True)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.hub.track(self.connection, add=False)

    def handle(self) -> None:
        try:
            while self._one():
                pass
        except (TimeoutError, ConnectionError):
            pass  # idle too long, or the client went away
        except _BadRequest as problem:
            error = InvalidArgument(f"bad HTTP request: {problem}")
            self._send(error.http_status or 400, wire.encode(error.to_wire()), close=True)

    def _line(self) -> bytes:
        line = self.rfile.readline(_MAX_LINE + 1)
        if len(line) > _MAX_LINE:
            raise _BadRequest("line too long")
        return line

    def _one(self) -> bool:
        """Answer one request; False when the connection should close."""
        request_line = self._line()
        if not request_line:
            return False
        parts = request_line.decode("latin-1").split()
        if len(parts) != 3 or parts[2] not in ("HTTP/1.1", "HTTP/1.0"):
            raise _BadRequest(f"request line {request_line[:80]!r}")
        method, path, version = parts
        headers: dict[str, str] = {}
        while True:
            line = self._line()
            if line in (b"\r\n", b"\n"):
                break
            if not line:
                return False
            name, colon, value = line.decode("latin-1").partition(":")
            if not colon or len(headers) >= _MAX_HEADERS:
                raise _BadRequest("malformed or too many headers")
            headers[name.strip().lower()] = value.strip()
        try:
            length = int(headers.get("content-length") or 0)
        except ValueError:
            raise _BadRequest("Content-Length is not a number") from None
        if length < 0 or length > MAX_BODY_BYTES:
            raise _BadRequest(f"body of {length} bytes (limit {MAX_BODY_BYTES})")
        body = self.rfile.read(length) if length else b""
        if len(body) < length:
            return False
        connection = headers.get("connection", "").lower()
        keep_alive = connection != "close" if version == "HTTP/1.1" else connection == "keep-alive"
        auth = headers.get("authorization", "")
        token = auth[7:] if auth.startswith("Bearer ") else None
        request = Request(method, path, body, token, headers.get("x-amux-binding"),
                          self.hub.owner_socket)
        response = self.hub.api.handle(request)
        log.debug("%s %s -> %d", method, path, response.status)  # never headers or bodies
        self._send(response.status, response.body, close=not keep_alive)
        return keep_alive

    def _send(self, status: int, body: bytes, *, close: bool) -> None:
        head = (f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\n"
                "Content-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\n"
                + ("Connection: close\r\n" if close else "") + "\r\n")
        self.wfile.write(head.encode("latin-1") + body)


class _Serving(socketserver.ThreadingMixIn):
    """What every listener shares: one thread per connection, tracked for shutdown."""

    daemon_threads = False
    block_on_close = True  # server_close() waits for in-flight requests
    request_queue_size = 128  # the default 5 makes a burst of connects fail with EAGAIN
    api: HubApi
    owner_socket: bool

    def _start_tracking(self) -> None:
        self._connections: set[socket.socket] = set()
        self._connections_lock = threading.Lock()

    def track(self, connection: socket.socket, *, add: bool) -> None:
        with self._connections_lock:
            (self._connections.add if add else self._connections.discard)(connection)

    def wake_idle(self) -> None:
        """Unblock connections waiting for their next request so threads can end."""
        with self._connections_lock:
            for connection in list(self._connections):
                with contextlib.suppress(OSError):  # already closed by the peer
                    connection.shutdown(socket.SHUT_RD)


class _UnixHTTPServer(_Serving, socketserver.UnixStreamServer):
    def __init__(self, path: Path, api: HubApi, *, owner_socket: bool) -> None:
        self.api = api
        self.owner_socket = owner_socket
        self._start_tracking()
        super().__init__(str(path), _Handler)


class _TLSHTTPServer(_Serving, socketserver.TCPServer):
    """The TCP listener for remote Runtimes: TLS only, token-authenticated, no admin."""

    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], api: HubApi, cert: str, key: str) -> None:
        import ssl

        self.api = api
        self.owner_socket = False
        self._context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self._context.load_cert_chain(cert, key)
        self._start_tracking()
        super().__init__(address, _Handler)

    def get_request(self) -> tuple[socket.socket, Any]:
        connection, address = self.socket.accept()
        connection.settimeout(IDLE_SECONDS)
        try:
            # The handshake happens on the handler thread's first read, not here, so a
            # slow or hostile client cannot stall the accept loop.
            wrapped = self._context.wrap_socket(
                connection, server_side=True, do_handshake_on_connect=False
            )
            return wrapped, address
        except Exception:
            connection.close()
            raise


class Hub:
    """One Hub over `<home>/memory`: opens the store exclusively and serves until stopped."""

    def __init__(self, home: Path, owner: str | None = None) -> None:
        self.home = home
        home.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.store = Store(home / "memory", exclusive=True)
        self.registry = Registry(home)
        self.config = ConfigFile(home)
        self.api = HubApi(self.store, self.registry, self.config, status=self.status)
        self.socket_path = owner_socket_path(home)
        self.pid_path = pid_path(home)
        self._ensure_owner(owner or _default_owner())
        self._stop = threading.Event()
        self._reload = threading.Event()
        self._shared_path: Path | None = None
        self._tls_address: str | None = None

    def _ensure_owner(self, name: str) -> None:
        issued = self.registry.ensure_owner(name)
        if issued is None:
            return
        credentials = self.home / "credentials"
        credentials.mkdir(mode=0o700, exist_ok=True)
        connection = {"version": 1, "hub": f"unix:{self.socket_path}", "token": issued.token}
        write_file_atomic(credentials / "owner.json", json.dumps(connection).encode() + b"\n")

    def status(self) -> dict[str, Any]:
        config = self.api.config
        listeners = [{"kind": "owner", "address": f"unix:{self.socket_path}"}]
        if self._shared_path is not None:
            listeners.append({"kind": "shared", "address": f"unix:{self._shared_path}"})
        if self._tls_address is not None:
            listeners.append({"kind": "tls", "address": self._tls_address})
        return {
            "running": True, "pid": os.getpid(), "address": f"unix:{self.socket_path}",
            "memory_root": str(self.store.root), "memory_enabled": config.memory_enabled,
            "isolation_enabled": config.isolation_enabled, "listeners": listeners,
            "version": __version__,
        }

    def _listen(self, path: Path, *, owner: bool) -> _UnixHTTPServer:
        """Bind one Unix-socket listener, replacing only a stale socket file at `path`."""
        with contextlib.suppress(FileNotFoundError):
            if stat.S_ISSOCK(os.lstat(path).st_mode):  # a crashed Hub's: we hold the root lock
                path.unlink()
        server = _UnixHTTPServer(path, self.api, owner_socket=owner)
        # The owner socket is private; the shared one is reachable by every local user,
        # who must still present a token (reachability is not authorization).
        os.chmod(path, 0o600 if owner else 0o666)
        return server

    def serve(self) -> None:
        """Serve until SIGTERM/SIGINT; SIGHUP re-reads config. Cleans up however it ends."""
        self.socket_path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.pid_path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        servers: list[_UnixHTTPServer | _TLSHTTPServer] = [
            self._listen(self.socket_path, owner=True)
        ]
        shared = self.api.config.shared_socket
        if shared:
            self._shared_path = Path(shared)
            self._shared_path.parent.mkdir(mode=0o755, parents=True, exist_ok=True)
            servers.append(self._listen(self._shared_path, owner=False))
        config = self.api.config
        if config.tls_address:
            host, _, port = config.tls_address.rpartition(":")
            if not (config.tls_cert and config.tls_key):
                raise InvalidArgument("listeners.tls_address needs listeners.tls_cert and "
                                      "listeners.tls_key")
            tls = _TLSHTTPServer((host, int(port)), self.api, config.tls_cert, config.tls_key)
            self._tls_address = f"https://{host}:{tls.server_address[1]}"
            servers.append(tls)
        write_file_atomic(self.pid_path, f"{os.getpid()}\n".encode())
        previous = {sig: signal.signal(sig, self._on_signal)
                    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)}
        loops = [threading.Thread(target=server.serve_forever, name="amux-hub-accept")
                 for server in servers]
        for loop in loops:
            loop.start()
        print(json.dumps(self.status()), flush=True)  # the readiness line
        _silence_stdout()  # a starter may close its end of our stdout once it read the line
        try:
            while not self._stop.is_set():
                self._stop.wait(0.2)
                if self._reload.is_set():
                    self._reload.clear()
                    self._reload_config()
        finally:
            for server in servers:
                server.shutdown()
            for loop in loops:
                loop.join()
            for server in servers:
                server.wake_idle()
                server.server_close()  # joins in-flight request threads
            for path in (self.socket_path, self._shared_path, self.pid_path):
                if path is not None:
                    path.unlink(missing_ok=True)
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            self.store.close()

    def _reload_config(self) -> None:
        try:
            self.api.reload()
            log.info("configuration reloaded")
        except AmuxError as error:
            log.error("configuration not reloaded: %s", error.message)

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        if signum == signal.SIGHUP:
            self._reload.set()
        else:
            self._stop.set()


def _silence_stdout() -> None:
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def _default_owner() -> str:
    """The owner principal is named after the Hub's Unix user (made a valid id)."""
    name = "".join(c if c.isalnum() or c in "._-" else "-" for c in getpass.getuser().lower())
    return name.lstrip("._-")[:64] or "owner"


def main(argv: list[str] | None = None) -> int:
    """`python -m amux.hub.server HOME`: serve HOME in the foreground (`amux hub serve`)."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m amux.hub.server AMUX_HOME", file=sys.stderr)
        return 2
    home = Path(args[0])
    logging.basicConfig(level=logging.INFO, format="amux hub: %(message)s")
    try:
        Hub(home).serve()
    except AmuxError as error:
        print(f"amux hub: {error.message}", file=sys.stderr)
        return error.exit_code
    return 0


if __name__ == "__main__":
    sys.exit(main())
