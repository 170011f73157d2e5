"""MCP result pages: a tool result over 6 KiB is sent page by page (SPEC Appendix A).

The first page goes back with a continuation token; `result_continue {"token"}`
returns the next one. Tokens live in this MCP server process only (another
session's token, or one older than `TOKEN_TTL_SECONDS`, is refused by name) and
each page is cut at a line break when there is one in the second half of the page,
else at a character boundary, so a page is always valid UTF-8.
"""

from __future__ import annotations

import secrets
import time

PAGE_BYTES = 6 * 1024
"""The MCP page budget: bytes of tool-result text, the trailer included."""
TOKEN_TTL_SECONDS = 15 * 60
MAX_PENDING = 64
"""Results kept for continuation at once; the oldest goes first."""

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable


class ContinuationError(Exception):
    """The token cannot be continued; the message says why and what to do."""


class Pages:
    """Cuts long texts into pages and remembers the rest under tokens."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._session = secrets.token_hex(4)  # names this process in its tokens
        self._pending: dict[str, tuple[float, bytes]] = {}

    def first(self, text: str) -> str:
        """`text` itself when it fits, else its first page plus a continuation trailer."""
        return self._page(text.encode("utf-8"))

    def next(self, token: object) -> str:
        """The page after the one that returned `token`."""
        if not isinstance(token, str) or token.count(".") != 1:
            raise ContinuationError("token must be the continuation string a result returned")
        self._expire()
        session, _ = token.split(".")
        if session != self._session:
            raise ContinuationError(
                "this continuation token belongs to another amux MCP session (tokens work "
                "only in the server that issued them); repeat the original call")
        entry = self._pending.get(token)
        if entry is None:
            raise ContinuationError(
                f"continuation token expired or unknown (tokens last {TOKEN_TTL_SECONDS // 60} "
                "minutes); repeat the original call")
        return self._page(entry[1])

    def _page(self, data: bytes) -> str:
        if len(data) <= PAGE_BYTES:
            return data.decode("utf-8")
        token = f"{self._session}.{secrets.token_urlsafe(12)}"
        # The trailer names the bytes still to come, so reserve room for the largest count.
        reserve = len(_trailer(token, len(data)).encode("utf-8"))
        cut = _cut(data, PAGE_BYTES - reserve)
        rest = data[cut:]
        self._expire()
        while len(self._pending) >= MAX_PENDING:
            del self._pending[next(iter(self._pending))]
        self._pending[token] = (self._clock() + TOKEN_TTL_SECONDS, rest)
        return data[:cut].decode("utf-8") + _trailer(token, len(rest))

    def _expire(self) -> None:
        now = self._clock()
        for token in [t for t, (deadline, _) in self._pending.items() if deadline <= now]:
            del self._pending[token]


def _trailer(token: str, remaining: int) -> str:
    return (f"\n[amux: result continues, {remaining} more bytes; call result_continue "
            f"with token \"{token}\"]")


def _cut(data: bytes, limit: int) -> int:
    """Where to end a page of at most `limit` bytes: after a newline, else a character."""
    newline = data.rfind(b"\n", limit // 2, limit)
    if newline >= 0:
        return newline + 1
    cut = limit
    while cut > 0 and (data[cut] & 0xC0) == 0x80:  # inside a UTF-8 sequence: step back
        cut -= 1
    return cut
