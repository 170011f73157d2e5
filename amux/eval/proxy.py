"""A recording pass-through proxy on loopback between the agent and the model endpoint.

The agent under evaluation is pointed at `http://127.0.0.1:PORT` plus the path of the
user's base URL; every request goes on, unchanged, to the user's endpoint and the answer
streams back as it arrives. Each exchange is recorded (tagged with the session the
harness is running): the request body, the status and the response bytes. That record
is the evaluation's view of the conversation: the tool calls the model made (memory and
others), the prompt the agent sent, and the prompt tokens the endpoint counted.

Without an upstream (`Proxy(None)`) the proxy answers every model request itself with a
short text reply: the capture run that measures an agent's first request before any
request reaches the user's endpoint.

Credentials pass through untouched and are never recorded: only the method, path, body
and response of each exchange are kept.
"""

from __future__ import annotations

import gzip
import json
import threading
import time
import urllib.error
import urllib.request
import zlib
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import urlsplit

from amux.adapters.base import ModelApi, basic_authorization
from amux.eval import model_apis
from amux.eval.loopback import LoopbackServer, QuietHandler
from amux.launcher import endpoints

UPSTREAM_TIMEOUT = 900.0
"""Seconds a local model may take to start answering (a long prompt on a small GPU)."""
RECORD_MAX_BYTES = 32 * 1024 * 1024
_HOP = frozenset({"connection", "keep-alive", "proxy-authenticate", "proxy-authorization",
                  "proxy-connection", "te", "trailer", "transfer-encoding", "upgrade", "host",
                  "content-length", "accept-encoding"})


@dataclass
class Exchange:
    """One request through the proxy and what answered it."""

    index: int
    tag: str
    method: str
    path: str
    body: Any
    """The parsed JSON request body, or None."""
    request_bytes: int
    api: ModelApi | None
    """The model API the path belongs to (None: any other endpoint)."""
    status: int = 0
    response: bytes = b""
    response_encoding: str = ""
    error: str | None = None
    """Why the endpoint could not be reached (the agent got a 502)."""
    started: float = field(default_factory=time.monotonic)
    seconds: float = 0.0

    @property
    def model_request(self) -> bool:
        """A request to one of the model APIs that offers tools (the agent's main
        conversation; side requests such as titles or Gemini CLI's model router offer
        none)."""
        return self.api is not None and model_apis.lists_tools(self.body)

    def parsed(self) -> model_apis.Parsed:
        payload = _decode(self.response, self.response_encoding)
        if self.api is None or payload is None:
            return model_apis.Parsed()
        return model_apis.parse_response(self.api, payload)


def _decode(raw: bytes, encoding: str) -> bytes | None:
    """`raw` decoded from its content encoding (None: one this module does not read)."""
    try:
        if encoding in ("", "identity"):
            return raw
        if encoding == "gzip":
            return gzip.decompress(raw)
        if encoding == "deflate":
            return zlib.decompress(raw)
    except (OSError, zlib.error):
        return None
    return None  # zstd, br: forwarded, not read


class Proxy(LoopbackServer):
    """The proxy server; a context manager. `upstream` is the user's base URL (only its
    scheme and host are used: request paths pass through; a user and password in it go
    as the `Authorization` of a request that has none), None to answer locally."""

    def __init__(self, upstream: str | None, reply: str = "ok") -> None:
        self.upstream = None if upstream is None else endpoints.root(upstream)
        self.authorization = None if upstream is None else basic_authorization(upstream)
        self.reply = reply
        self.tag = ""
        self._lock = threading.Lock()
        self._exchanges: list[Exchange] = []
        self._opener = urllib.request.build_opener()
        super().__init__(_handler_for(self))

    def base_url(self, user_base_url: str) -> str:
        """What the agent is pointed at: this proxy plus the path of the user's base URL."""
        return self.url + urlsplit(user_base_url).path.rstrip("/")

    def exchanges(self, tag: str | None = None) -> list[Exchange]:
        """Recorded exchanges in arrival order, optionally of one session tag."""
        with self._lock:
            return [e for e in self._exchanges if tag is None or e.tag == tag]

    def _record(self, exchange: Exchange) -> Exchange:
        with self._lock:
            exchange.index = len(self._exchanges)
            exchange.tag = self.tag
            self._exchanges.append(exchange)
        return exchange


def _handler_for(proxy: Proxy) -> type[BaseHTTPRequestHandler]:
    class Handler(QuietHandler):
        def _handle(self) -> None:
            raw = self._read_body() if self.command not in ("GET", "HEAD") else b""
            headers = {k.lower(): v for k, v in self.headers.items()}
            path = self.path.partition("?")[0]
            decoded = _decode(raw, headers.get("content-encoding", "").lower())
            try:
                body: Any = json.loads(decoded) if decoded else None
            except ValueError:
                body = None
            kind = model_apis.api_for(path) if self.command == "POST" else None
            exchange = proxy._record(Exchange(0, "", self.command, path, body, len(raw),
                                              kind))
            try:
                if proxy.upstream is None:
                    self._answer_locally(exchange)
                else:
                    self._forward(exchange, raw)
            finally:
                exchange.seconds = time.monotonic() - exchange.started

        def _answer_locally(self, exchange: Exchange) -> None:
            if exchange.api is not None:
                content_type, payload = model_apis.render_text(exchange.api, exchange.body,
                                                         proxy.reply, exchange.path)
                status = 200
            elif exchange.path.endswith("/count_tokens"):
                content_type, status = model_apis.JSON, 200
                payload = json.dumps({"input_tokens": exchange.request_bytes // 4}).encode()
            elif exchange.path.endswith(":countTokens"):  # Gemini's
                content_type, status = model_apis.JSON, 200
                payload = json.dumps({"totalTokens": exchange.request_bytes // 4}).encode()
            elif exchange.path.rstrip("/").endswith("/models") and self.command == "GET":
                content_type, status = model_apis.JSON, 200
                payload = json.dumps({"object": "list", "data": []}).encode()
            elif self.command in ("GET", "HEAD"):
                content_type, status, payload = model_apis.JSON, 200, b"{}"
            else:
                content_type, status = model_apis.JSON, 404
                payload = json.dumps({"error": {"type": "not_found_error",
                                                "message": "amux eval capture"}}).encode()
            exchange.status, exchange.response = status, payload
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(payload)

        def _forward(self, exchange: Exchange, raw: bytes) -> None:
            assert proxy.upstream is not None
            headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP}
            if proxy.authorization and "authorization" not in map(str.lower, headers):
                headers["Authorization"] = proxy.authorization
            request = urllib.request.Request(proxy.upstream + self.path,
                                             data=raw if raw or self.command == "POST"
                                             else None, headers=headers, method=self.command)
            try:
                response = proxy._opener.open(request, timeout=UPSTREAM_TIMEOUT)
            except urllib.error.HTTPError as error:
                response = error
            except (urllib.error.URLError, OSError, ValueError) as error:
                reason = getattr(error, "reason", error)
                exchange.error = f"cannot reach {proxy.upstream}: {reason}"
                payload = json.dumps({"type": "error", "error": {
                    "type": "api_error", "message": f"amux eval proxy: {exchange.error}"}},
                ).encode()
                exchange.status, exchange.response = 502, payload
                self.send_response(502)
                self.send_header("Content-Type", model_apis.JSON)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
                return
            with response:
                exchange.status = response.status
                exchange.response_encoding = response.headers.get("Content-Encoding",
                                                                  "").lower()
                self.send_response(response.status)
                for key, value in response.headers.items():
                    if key.lower() not in _HOP:
                        self.send_header(key, value)
                if self.command == "HEAD":
                    self.end_headers()
                    return
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                kept: list[bytes] = []
                size = 0
                while True:
                    chunk = response.read1(65536)
                    if not chunk:
                        break
                    if size < RECORD_MAX_BYTES:
                        kept.append(chunk)
                        size += len(chunk)
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                    self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()
                exchange.response = b"".join(kept)

        do_GET = do_POST = do_HEAD = do_PUT = do_DELETE = do_PATCH = _handle

    return Handler
