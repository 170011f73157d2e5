"""HTTP/1.1 to the Hub over a Unix socket or TLS, with the standard library's `socket`.

`http.client` would cost ~50 ms of imports (it pulls in `email`) on every CLI
call an agent makes; the Hub's answers are small JSON bodies with a
Content-Length, so a few lines of request writing and response parsing do.
One `HubClient` keeps its connection open for several calls (export pages).

A Hub at a cap answers `hub_busy` having done nothing, so `call` sends again after a
pause that doubles, with jitter (so refused clients do not come back together), for up
to `BUSY_RETRY_SECONDS` in all before it reports it (docs/hub.md "Capacity").
"""

from __future__ import annotations

import _socket
import json
import sys

from amux.client.connection import Connection, find_connection
from amux.encoding import encode
from amux.errors import AmuxError, HubUnreachable, InternalError, from_wire

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

TIMEOUT_SECONDS = 30.0
BUSY_RETRY_SECONDS = 10.0
"""How long `call` keeps retrying a `hub_busy` answer before reporting it."""
_BUSY_FIRST_PAUSE = 0.05
_BUSY_MAX_PAUSE = 1.0
_MAX_HEADER_BYTES = 64 * 1024
_MAX_ANSWER_BYTES = 64 * 1024 * 1024
"""The Hub's answers are kilobytes (`list` of 1,000 documents: ~150 KB)."""


class HubClient:
    """Calls Hub endpoints; raises `AmuxError` with the Hub's code on failure."""

    def __init__(self, connection: Connection, timeout: float = TIMEOUT_SECONDS) -> None:
        self.connection = connection
        self.timeout = timeout
        self._sock: _socket.socket | None = None
        self._buffer = b""

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None
        self._buffer = b""

    def __enter__(self) -> HubClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def connect(self) -> None:
        """Connect now rather than at the first call (`hub_unreachable` if nothing answers)."""
        if self._sock is None:
            self._sock = self._connect()

    def set_timeout(self, seconds: float) -> None:
        """Wait this long for each answer from now on (a sync's can take minutes)."""
        self.timeout = seconds
        if self._sock is not None:
            self._sock.settimeout(seconds)

    def _connect(self) -> _socket.socket:
        """A connected socket. Unix sockets use the C module `_socket` directly: the
        `socket` wrapper imports `selectors` and enums, ~4 ms of every CLI call."""
        hub = self.connection.hub
        try:
            if hub.startswith("unix:"):
                sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
                try:
                    sock.settimeout(self.timeout)
                    sock.connect(hub[len("unix:"):])
                    _check_peer(sock, self.connection)
                except BaseException:
                    sock.close()
                    raise
                return sock
            import socket

            host, _, port = hub.split("://", 1)[1].rstrip("/").rpartition(":")
            raw = socket.create_connection((host, int(port)), timeout=self.timeout)
            if hub.startswith("http://"):
                return raw
            import ssl

            try:
                context = ssl.create_default_context(cafile=self.connection.ca_file)
                return context.wrap_socket(raw, server_hostname=host)
            except BaseException:
                raw.close()
                raise
        except (OSError, ValueError) as exc:
            where = f"{hub} ({self.connection.source})"
            message = (f"cannot reach the Hub at {where}: {exc}; nothing was read or "
                       "written (a Hub that is not running is started by its owner: amux "
                       "hub start)")
            raise HubUnreachable(message) from None

    def call(self, path: str, body: dict[str, Any]) -> Any:
        """POST `body` to `path`; the decoded JSON answer, or `AmuxError` (`hub_busy`
        only once the Hub kept refusing for `BUSY_RETRY_SECONDS`)."""
        deadline = pause = 0.0
        while True:
            try:
                return self._call_once(path, body)
            except AmuxError as error:
                if error.code != "hub_busy":
                    raise
                import random  # only here: the CLI's start does not pay for it
                import time

                now = time.monotonic()
                if not deadline:
                    deadline = now + min(BUSY_RETRY_SECONDS, self.timeout)
                pause = min(_BUSY_MAX_PAUSE, pause * 2 or _BUSY_FIRST_PAUSE)
                if now >= deadline:
                    raise
                self.close()  # the Hub closes a refused connection
                time.sleep(min(random.uniform(pause / 2, pause), deadline - now))

    def _call_once(self, path: str, body: dict[str, Any]) -> Any:
        payload = encode(body)
        head = [
            f"POST {path} HTTP/1.1", "Host: amux-hub", "Content-Type: application/json",
            f"Content-Length: {len(payload)}",
        ]
        if self.connection.token:
            head.append(f"Authorization: Bearer {self.connection.token}")
        if self.connection.binding:
            head.append(f"X-Amux-Binding: {self.connection.binding}")
        request = ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + payload
        while True:
            reused = self._sock is not None
            if self._sock is None:
                self._sock = self._connect()
            try:
                # The Hub may answer and stop reading before all is sent (a 413 for a body
                # over its limit): then that answer, read next, is what counts.
                try:  # noqa: SIM105 (contextlib is not imported: it costs the CLI's start)
                    self._sock.sendall(request)
                except (BrokenPipeError, ConnectionResetError):
                    pass
                status, data = self._read_response()
                break
            except _Malformed as what:
                self.close()
                raise HubUnreachable(
                    f"{self.connection.hub} ({self.connection.source}) did not answer as the "
                    f"Hub does: {what}; check that this address is an amux Hub",
                ) from None
            except (ConnectionError, _Closed):
                self.close()
                if reused:  # the Hub closed an idle kept-alive connection: send it again
                    continue
                raise HubUnreachable(
                    f"the Hub at {self.connection.hub} closed the connection before "
                    "answering; the outcome is unknown: re-read before retrying a write",
                ) from None
            except OSError as exc:
                self.close()
                raise HubUnreachable(f"talking to the Hub failed: {exc}") from None
        try:
            value = json.loads(data)
        except ValueError:
            raise InternalError(f"the Hub answered {status} with non-JSON") from None
        if status >= 400 or (isinstance(value, dict) and "error" in value):
            error = value.get("error", {}) if isinstance(value, dict) else {}
            details = {k: v for k, v in error.items() if k not in ("code", "message")}
            raise from_wire(str(error.get("code", "internal")),
                            str(error.get("message", f"HTTP {status}")), details)
        return value

    def _read_response(self) -> tuple[int, bytes]:
        """One answer's status and body. Raises `_Malformed` for anything but HTTP/1.x
        framed by exactly one Content-Length, as the Hub sends it."""
        while True:
            start = self._buffer[:7]
            if start != b"HTTP/1."[:len(start)]:
                raise _Malformed(f"it is not HTTP: {self._buffer[:60]!r}")
            end = self._buffer.find(b"\r\n\r\n")
            if end >= 0:
                break
            if len(self._buffer) > _MAX_HEADER_BYTES:
                raise _Malformed(f"headers over {_MAX_HEADER_BYTES} bytes")
            self._fill()
        lines = self._buffer[:end].decode("latin-1").split("\r\n")
        self._buffer = self._buffer[end + 4:]
        code = lines[0].partition(" ")[2]
        if not (code[:3].isascii() and code[:3].isdigit() and code[3:4] in ("", " ")):
            raise _Malformed(f"the status line {lines[0][:80]!r}")
        length = None
        close = False
        for line in lines[1:]:
            name, colon, value = line.partition(":")
            name, value = name.lower(), value.strip()
            if not colon:
                raise _Malformed(f"the header line {line[:80]!r}")
            if name == "content-length":
                if length is not None:
                    raise _Malformed("Content-Length given twice")
                if not (value.isascii() and value.isdigit()):
                    raise _Malformed(f"Content-Length {value[:40]!r}")
                length = int(value)
            elif name == "transfer-encoding":
                raise _Malformed("Transfer-Encoding instead of a Content-Length")
            elif name == "connection":
                close = value.lower() == "close"
        if length is None:
            raise _Malformed("no Content-Length")
        if length > _MAX_ANSWER_BYTES:
            raise _Malformed(f"Content-Length {length}, over {_MAX_ANSWER_BYTES}")
        while len(self._buffer) < length:
            self._fill()
        data, self._buffer = self._buffer[:length], self._buffer[length:]
        if close:
            self.close()
        return int(code[:3]), data

    def _fill(self) -> None:
        assert self._sock is not None
        chunk = self._sock.recv(65536)
        if not chunk:
            raise _Closed()
        self._buffer += chunk


class _Closed(Exception):
    """The Hub closed the connection before a whole response arrived."""


class _Malformed(Exception):
    """What arrived is not an answer the Hub would send; says what was wrong."""


def _check_peer(sock: _socket.socket, connection: Connection) -> None:
    """Refuse a Unix socket served by anyone but the Hub's user, before a token is sent.

    A socket in a directory another user can write may be theirs, listening in the
    Hub's place (SPEC §4). Root is accepted as well: it can read every token file
    anyway, and the Hub of isolated runs is often root's.
    """
    uid, pid = _peer(sock, connection)
    if uid in (connection.hub_uid, 0):
        return
    peer = _user(uid) if pid is None else f"{_user(uid)}, pid {pid},"
    raise HubUnreachable(
        f"refusing to send the token to {connection.hub} ({connection.source}): that socket "
        f"is served by {peer} but the Hub runs as {_user(connection.hub_uid)}; most likely "
        "another local user is listening in the Hub's place (its socket is in a directory "
        "they can write): stop that process, remove the socket and restart the Hub; if the "
        "Hub does run as another user, put its uid in the connection config's hub_uid",
        {"peer_uid": uid, "hub_uid": connection.hub_uid})


def _peer(sock: _socket.socket, connection: Connection) -> tuple[int, int | None]:
    """The uid of the process listening on a connected Unix socket, and its pid if known."""
    if sys.platform.startswith("linux"):  # SO_PEERCRED: struct ucred {pid, uid, gid}
        raw = sock.getsockopt(_socket.SOL_SOCKET, _socket.SO_PEERCRED, 12)
        return int.from_bytes(raw[4:8], sys.byteorder), int.from_bytes(raw[0:4], sys.byteorder)
    if sys.platform == "darwin":  # SOL_LOCAL 0, LOCAL_PEERCRED 1: struct xucred {version, uid…}
        return int.from_bytes(sock.getsockopt(0, 1, 76)[4:8], sys.byteorder), None
    raise HubUnreachable(f"cannot check which user serves {connection.hub} on "
                         f"{sys.platform}, so the token is not sent: reach the Hub over https")


def _user(uid: int) -> str:
    import pwd

    try:
        return f"uid {uid} ({pwd.getpwuid(uid).pw_name})"
    except KeyError:
        return f"uid {uid}"


def hub_client(start_hub: Callable[[], object] | None = None) -> HubClient:
    """A client of the Hub this process uses (`find_connection`). With `start_hub`, the
    local default's Hub is started on demand, only once nothing answers its socket: a
    running Hub (the common case) costs one connect and no import of the code that
    starts one. A configured Hub (AMUX_MEMORY_CONFIG, AMUX_HUB) is never started."""
    try:
        connection = find_connection()
        client = HubClient(connection)
        if start_hub is not None and connection.is_local_default:
            client.connect()
        return client
    except AmuxError as error:
        if start_hub is None or error.code != "hub_unreachable":
            raise
    start_hub()
    return HubClient(find_connection())
