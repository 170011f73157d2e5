"""The page's HTTP server: loopback only, a key per start, Host and Origin checked.

Every answer carries a strict Content-Security-Policy (scripts and styles from this
server only, nothing else loads), no CORS header, and `no-store`. `GET /` and the two
static files are the page's empty shell; everything with data is `POST /api/<name>`
(`page.OPERATIONS`), answered only when the request

- names this server in `Host` (`127.0.0.1:PORT` or `localhost:PORT`: a DNS-rebound
  name is refused),
- comes from this page (`Origin` is this server; `Sec-Fetch-Site`, when sent, is
  `same-origin`: a cross-site form or fetch is refused),
- carries the key of this start in `X-Amux-Key`. The key reaches the browser in the
  URL's fragment (never sent to a server), and the page keeps it in the origin's
  local storage. Not in a cookie: cookies are shared by every port of a host, so
  another local user's server on 127.0.0.1:OTHER would receive it.
"""

from __future__ import annotations

import hmac
import json
import logging
import secrets
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import Any

from amux.encoding import encode
from amux.errors import AmuxError, Forbidden, InternalError, InvalidArgument, Unauthenticated
from amux.ui.page import Page, answer

log = logging.getLogger("amux.ui")

LOOPBACK = "127.0.0.1"
BODY_MAX_BYTES = 4 * 1024 * 1024
"""A request body's cap: a document's largest edit, JSON-escaped, fits with room."""
IDLE_SECONDS = 60.0
"""A connection idle this long is closed (a live wait answers well before)."""
KEY_HEADER = "X-Amux-Key"

CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
       "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
SECURITY_HEADERS = (
    ("Content-Security-Policy", CSP),
    ("X-Content-Type-Options", "nosniff"),
    ("X-Frame-Options", "DENY"),
    ("Referrer-Policy", "no-referrer"),
    ("Cross-Origin-Opener-Policy", "same-origin"),
    ("Cross-Origin-Resource-Policy", "same-origin"),
    ("Cache-Control", "no-store"),
)
STATIC = {
    "/": ("index.html", "text/html; charset=utf-8"),
    "/static/app.js": ("app.js", "text/javascript; charset=utf-8"),
    "/static/app.css": ("app.css", "text/css; charset=utf-8"),
    "/favicon.ico": ("icon.svg", "image/svg+xml"),
}
"""The shell: what `GET` may fetch, none of it data."""


def new_key() -> str:
    return secrets.token_urlsafe(32)


class PageServer(ThreadingHTTPServer):
    """One user's page: its `Page`, its key, the names it answers to."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, page: Page, key: str, port: int = 0) -> None:
        self.page = page
        self.key = key
        super().__init__((LOOPBACK, port), _Handler)
        self.port: int = self.server_address[1]
        self.hosts = frozenset({f"{LOOPBACK}:{self.port}", f"localhost:{self.port}"})
        self.origins = frozenset(f"http://{host}" for host in self.hosts)
        self.shell = {path: (resources.files("amux.ui").joinpath("static", name).read_bytes(),
                             kind) for path, (name, kind) in STATIC.items()}

    @property
    def url(self) -> str:
        """The address to open: the key in the fragment, which no request carries."""
        return f"http://{LOOPBACK}:{self.port}/#key={self.key}"


class _Handler(BaseHTTPRequestHandler):
    server: PageServer
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # an answer is one write: no 40 ms delayed-ACK stall
    wbufsize = 64 * 1024  # head and body leave together (flushed after each request)
    timeout = IDLE_SECONDS
    server_version = "amux-ui"
    sys_version = ""

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: nothing of a request is logged (its key is in a header, never logged)."""

    def do_GET(self) -> None:
        if not self._host_allowed():
            return
        shell = self.server.shell.get(self.path.partition("?")[0])
        if shell is None:
            self._send(404, b"not found\n", "text/plain; charset=utf-8")
            return
        self._send(200, *shell)

    def do_POST(self) -> None:
        if not self._host_allowed():
            return
        try:
            self._check_request()
            body = self._body()
            name = self.path.removeprefix("/api/")
            result = answer(self.server.page, name, body)
        except AmuxError as error:
            self.close_connection = True  # a refused body may be unread: no keep-alive
            self._json(error.http_status or 502, error.to_wire())
            return
        except Exception:
            log.exception("the page's %s failed", self.path)
            self.close_connection = True
            self._json(500, InternalError("internal error in amux ui; see its log").to_wire())
            return
        self._json(200, result)

    def _refuse(self) -> None:
        self._send(405, b"use GET for the page and POST for /api\n", "text/plain; charset=utf-8")

    do_PUT = do_DELETE = do_PATCH = do_OPTIONS = do_HEAD = _refuse  # no CORS preflight passes

    def _host_allowed(self) -> bool:
        """Refuse a request naming another host (DNS rebinding) before anything else."""
        if self.headers.get("Host", "") in self.server.hosts:
            return True
        self._send(421, b"this server answers only to its own loopback address\n",
                   "text/plain; charset=utf-8")
        return False

    def _check_request(self) -> None:
        if not self.path.startswith("/api/"):
            raise InvalidArgument(f"no such endpoint {self.path}")
        origin = self.headers.get("Origin")
        site = self.headers.get("Sec-Fetch-Site")
        if origin not in self.server.origins or site not in (None, "same-origin"):
            raise Forbidden("a request from another site: refused")
        given = self.headers.get(KEY_HEADER, "")
        if not hmac.compare_digest(given.encode(), self.server.key.encode()):
            raise Unauthenticated("no key, or the key of another start: open the address "
                                  "`amux ui` printed")
        if self.headers.get_content_type() != "application/json":
            raise InvalidArgument("send application/json")

    def _body(self) -> dict[str, Any]:
        try:
            length = int(self.headers.get("Content-Length", "0"))
        except ValueError:
            raise InvalidArgument("Content-Length must be a number") from None
        if not 0 <= length <= BODY_MAX_BYTES:
            self.close_connection = True
            raise InvalidArgument(f"a request body is at most {BODY_MAX_BYTES} bytes")
        try:
            value = json.loads(self.rfile.read(length) or b"{}")
        except (UnicodeDecodeError, ValueError, RecursionError):
            raise InvalidArgument("the request body is not a JSON object") from None
        if not isinstance(value, dict):
            raise InvalidArgument("the request body is not a JSON object")
        return value

    def _json(self, status: int, value: Any) -> None:
        self._send(status, encode(value), "application/json")

    def _send(self, status: int, body: bytes, kind: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        for name, value in SECURITY_HEADERS:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

