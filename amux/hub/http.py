"""The Hub's HTTP/1.1 framing: requests read by h11 plus the checks it leaves out.

A hand-written parser accepted `Content-Length : 2`, `+2` and `0_2`, let the last
of two lengths win, ignored `Transfer-Encoding` (chunk bytes ran as a second
request) and split headers on `\\x85`. h11 is a well-kept parser (SPEC §4); on
top of it the Hub refuses everything that lets two readers frame one byte stream
differently: any `Transfer-Encoding`, a repeated `Content-Length` (even an equal
one, which h11 merges), obs-fold (which h11 unfolds), whitespace before a colon,
and a repeated `Authorization`, `X-Amux-Binding` or `Host`.

A `RequestReader` is fed whatever the event loop received and hands out a
request's head as soon as it is complete, so the token is checked before any of
the body is read (docs/hub.md "Framing and limits"), then the whole request.
It keeps one `h11.Connection` per request, carrying pipelined bytes over to the
next: h11's response writer would double its cost per request, and a response
here is three fixed headers (`render_response`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from http import HTTPStatus

import h11

from amux.encoding import encode
from amux.errors import AmuxError, InvalidArgument, QuotaExceeded

MAX_BODY_BYTES = 1024 * 1024
"""A 64 KiB document JSON-escaped stays far below this; anything larger is refused."""
MAX_HEAD_BYTES = 8 * 1024
"""Request line plus headers: the client's are under 300 bytes. Until its head is
complete and authenticated this is all a connection may hold."""

_END_OF_HEAD = re.compile(rb"\n\r?\n")  # exactly where h11 ends a head
_ONCE = frozenset({b"content-length", b"authorization", b"x-amux-binding", b"host"})


@dataclass(frozen=True, slots=True)
class Head:
    """A request's line and the headers the Hub reads; the body has not been read."""

    method: str
    path: str
    token: str | None
    binding: str | None
    length: int
    """The announced Content-Length (0 without one)."""


class RequestReader:
    """One connection's requests, in order: each head as soon as it is complete, then
    its whole body. Raises an `AmuxError` (400 or 413) for anything malformed."""

    __slots__ = ("_chunks", "_h11")
    _h11: h11.Connection
    _chunks: list[bytes]

    def __init__(self) -> None:
        self._start(b"")

    def _start(self, pipelined: bytes) -> None:
        """A fresh h11 state for the next request, fed what already arrived of it."""
        self._h11 = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEAD_BYTES)
        if pipelined:
            self._h11.receive_data(pipelined)
        self._chunks = []

    def feed(self, data: bytes) -> None:
        self._h11.receive_data(data)

    @property
    def buffered(self) -> int:
        """Bytes received and not yet handed out."""
        return len(self._h11.trailing_data[0])

    def next_head(self) -> Head | None:
        """The next request's head, or None until all of it arrived."""
        raw = self._h11.trailing_data[0]
        end = _END_OF_HEAD.search(raw, 0, MAX_HEAD_BYTES + 2)
        if end is None:
            if len(raw) > MAX_HEAD_BYTES:
                raise QuotaExceeded(
                    "request_head_bytes", MAX_HEAD_BYTES, len(raw),
                    f"the request line and headers exceed {MAX_HEAD_BYTES} bytes: "
                    "send fewer or shorter headers")
            return None
        fields = _fields(raw[:end.start()])
        event = self._next()  # h11 validates all of the head
        assert isinstance(event, h11.Request)  # the whole head was there
        auth = fields.get(b"authorization", b"")
        binding = fields.get(b"x-amux-binding")
        return Head(event.method.decode("ascii"), event.target.decode("latin-1"),
                    auth[7:].decode("latin-1") if auth.startswith(b"Bearer ") else None,
                    None if binding is None else binding.decode("latin-1"),
                    int(fields.get(b"content-length", b"0")))

    def next_body(self) -> tuple[bytes, bool] | None:
        """The current request's whole body and whether the client keeps the connection
        open, or None until all of it arrived. The reader then waits for the next head."""
        while True:
            event = self._next()
            if event is h11.NEED_DATA:
                return None
            if isinstance(event, h11.Data):
                self._chunks.append(event.data)
                continue
            assert isinstance(event, h11.EndOfMessage)
            keep_alive = self._h11.their_state is h11.DONE  # not MUST_CLOSE
            body = b"".join(self._chunks)
            self._start(self._h11.trailing_data[0])
            return body, keep_alive

    def _next(self) -> object:
        try:
            return self._h11.next_event()
        except h11.RemoteProtocolError as error:
            raise InvalidArgument(f"bad HTTP request: {error}") from None


def _fields(head: bytes) -> dict[bytes, bytes]:
    """The headers the Hub reads, by lower-case name, from a raw head; refuses what h11
    accepts but another reader could frame differently. h11 validates the rest."""
    fields: dict[bytes, bytes] = {}
    for line in head.split(b"\n")[1:]:
        if line[:1] in (b" ", b"\t"):
            raise InvalidArgument("bad HTTP request: a header line starts with whitespace "
                                  "(obs-fold): send each header on one line")
        name, colon, value = line.partition(b":")
        if colon and name != name.rstrip():
            raise InvalidArgument(f"bad HTTP request: whitespace before the colon in "
                                  f"{name.decode('latin-1')[:40]!r}: remove it")
        name = name.lower()
        if name == b"transfer-encoding":
            raise InvalidArgument("bad HTTP request: Transfer-Encoding is not accepted: "
                                  "send the body with one Content-Length")
        if name in _ONCE:
            if name in fields or (name == b"content-length" and b"," in value):
                raise InvalidArgument(f"bad HTTP request: {name.decode()} given more than "
                                      "once: send it once")
            fields[name] = value.strip()  # optional whitespace, and the CR of CRLF
    return fields


def render_response(status: int, body: bytes, *, close: bool) -> bytes:
    """One HTTP/1.1 JSON response."""
    head = (f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\n"
            "Content-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n"
            + ("Connection: close\r\n" if close else "") + "\r\n")
    return head.encode("latin-1") + body


def render_error(error: AmuxError) -> bytes:
    """The Appendix A answer to a request the Hub refuses before it reaches the API;
    the connection closes after it."""
    return render_response(error.http_status or 400, encode(error.to_wire()), close=True)
