"""The Hub's HTTP/1.1 framing: parse requests out of a byte buffer, render responses.

`http.server` parses headers with the `email` package, which cost more per
request than the store's own work; the Hub's requests are small JSON POSTs from
known clients, so a strict minimal parser over the connection's buffer does.
Buffer-based (not stream-based) so the event loop can feed it whatever arrived.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from http import HTTPStatus

MAX_BODY_BYTES = 1024 * 1024
"""A 64 KiB document JSON-escaped stays far below this; anything larger is refused."""
MAX_HEAD_BYTES = 64 * 1024
"""Request line plus headers."""
MAX_HEADERS = 64

_END_OF_HEAD = re.compile(rb"\r?\n\r?\n")


class BadRequest(Exception):
    """The bytes on the connection are not an HTTP/1.x request we can answer."""


@dataclass(frozen=True)
class HttpRequest:
    method: str
    path: str
    body: bytes
    token: str | None
    binding: str | None
    keep_alive: bool


def parse_request(buffer: bytearray) -> tuple[HttpRequest, int] | None:
    """The first complete request in `buffer` and its length in bytes, or None if incomplete.

    Raises `BadRequest` for anything malformed or over the limits, as soon as it shows.
    """
    end = _END_OF_HEAD.search(buffer, 0, MAX_HEAD_BYTES + 4)
    if end is None:
        if len(buffer) > MAX_HEAD_BYTES:
            raise BadRequest(f"request head over {MAX_HEAD_BYTES} bytes")
        return None
    lines = bytes(buffer[: end.start()]).decode("latin-1").splitlines()
    parts = lines[0].split() if lines else []
    if len(parts) != 3 or parts[2] not in ("HTTP/1.1", "HTTP/1.0"):
        raise BadRequest(f"request line {lines[0][:80] if lines else ''!r}")
    method, path, version = parts
    if len(lines) - 1 > MAX_HEADERS:
        raise BadRequest(f"more than {MAX_HEADERS} headers")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, colon, value = line.partition(":")
        if not colon:
            raise BadRequest(f"malformed header {line[:80]!r}")
        headers[name.strip().lower()] = value.strip()
    try:
        length = int(headers.get("content-length") or 0)
    except ValueError:
        raise BadRequest("Content-Length is not a number") from None
    if length < 0 or length > MAX_BODY_BYTES:
        raise BadRequest(f"body of {length} bytes (limit {MAX_BODY_BYTES})")
    total = end.end() + length
    if len(buffer) < total:
        return None
    connection = headers.get("connection", "").lower()
    keep_alive = connection != "close" if version == "HTTP/1.1" else connection == "keep-alive"
    auth = headers.get("authorization", "")
    return HttpRequest(
        method, path, bytes(buffer[end.end():total]),
        auth[7:] if auth.startswith("Bearer ") else None,
        headers.get("x-amux-binding"), keep_alive,
    ), total


def render_response(status: int, body: bytes, *, close: bool) -> bytes:
    """One HTTP/1.1 JSON response."""
    head = (f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\n"
            "Content-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n"
            + ("Connection: close\r\n" if close else "") + "\r\n")
    return head.encode("latin-1") + body
