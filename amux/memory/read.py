"""Bounded, paged reads of one document (`get`, SPEC §3 and Appendix A).

A page is a 1-based inclusive line range, or a continuation from a byte offset,
cut so that the whole compact-JSON response fits the 8 KiB storage budget. Pages
end on a line boundary unless one line alone exceeds the budget; then they end on
a character boundary and `next_offset` continues inside that line.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from amux.encoding import encoded_size
from amux.errors import InvalidArgument, NotUtf8
from amux.memory.limits import RESPONSE_MAX_BYTES, STALE_AFTER_SECONDS
from amux.memory.lines import char_start, is_char_boundary, line_count
from amux.memory.revision import ABSENT, revision_of

STALE_NOTE = (
    "This memory is {days} days old. Memories are point-in-time observations, not live "
    "state; verify claims about code or files before asserting them."
)

_TWO_BYTE_ESCAPES = b'"\\\n\r\t\b\f'
_SIX_BYTE_ESCAPES = bytes(c for c in range(0x20) if c not in b"\n\r\t\b\f")


def escaped_size(data: bytes) -> int:
    """Bytes `data` (UTF-8) takes inside a compact JSON string, quotes excluded."""
    size = len(data)
    size += size - len(data.translate(None, _TWO_BYTE_ESCAPES))
    size += 5 * (len(data) - len(data.translate(None, _SIX_BYTE_ESCAPES)))
    return size


def rfc3339(timestamp: float) -> str:
    """UTC RFC 3339 with seconds precision, e.g. `2026-11-30T02:24:48Z`."""
    moment = dt.datetime.fromtimestamp(timestamp, tz=dt.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def stale_note(mtime: float, now: float) -> str | None:
    """The staleness warning for a document last modified at `mtime`, or None under a day."""
    age = now - mtime
    if age < STALE_AFTER_SECONDS:
        return None
    return STALE_NOTE.format(days=int(age // STALE_AFTER_SECONDS))


def _non_negative(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidArgument(f"{name} must be a non-negative integer, got {value!r}")
    return value


def check_range(start_line: object, end_line: object, offset: object) -> tuple[int, int, int]:
    """Validate get's line range and offset arguments (0 means 'not given')."""
    start = _non_negative("start_line", start_line)
    end = _non_negative("end_line", end_line)
    off = 0 if offset is None else _non_negative("offset", offset)
    if start and off:
        raise InvalidArgument(
            "give either start_line or offset, not both: offset continues a truncated "
            "page with the same path and end_line"
        )
    if start and end and end < start:
        raise InvalidArgument(f"end_line {end} is before start_line {start}")
    return start, end, off


def _line_start(data: bytes, line: int) -> int:
    """Byte offset where 1-based `line` starts (len(data) past the end)."""
    position = 0
    for _ in range(line - 1):
        found = data.find(b"\n", position)
        if found < 0:
            return len(data)
        position = found + 1
    return position


def _line_end(data: bytes, line: int) -> int:
    """Byte offset just past 1-based `line` (its newline included)."""
    start = _line_start(data, line)
    found = data.find(b"\n", start)
    return len(data) if found < 0 else found + 1


def absent_page(path: str) -> dict[str, Any]:
    return {
        "path": path, "exists": False, "revision": ABSENT, "content": "",
        "start_line": 0, "end_line": 0, "total_lines": 0, "truncated": False,
        "next_offset": None, "modified_at": None, "stale_note": None,
    }


def page(
    path: str, data: bytes, mtime: float, now: float, start_line: int, end_line: int, offset: int
) -> dict[str, Any]:
    """One page of document `path` (validated range arguments, see `check_range`)."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise NotUtf8(
            f"{path} is not valid UTF-8 at byte {exc.start} (edited outside amux?); "
            "fix or rewrite it with an ordinary editor"
        ) from None
    total = line_count(data)
    if offset:
        if offset > len(data):
            raise InvalidArgument(f"offset {offset} is past the end ({len(data)} bytes)")
        if not is_char_boundary(data, offset):
            raise InvalidArgument(f"offset {offset} is inside a UTF-8 character")
        begin = offset
    else:
        first = start_line or 1
        if first > max(total, 1):
            raise InvalidArgument(f"start_line {first} is past the end: {path} has {total} lines")
        begin = _line_start(data, first)
    limit = len(data) if not end_line or end_line >= total else _line_end(data, end_line)
    limit = max(limit, begin)

    # Reserve the widest value each field can take: `false` is longer than `true`, and
    # `null` is longer than a next_offset under 1000.
    response: dict[str, Any] = {
        "path": path, "exists": True, "revision": revision_of(data), "content": "",
        "start_line": total, "end_line": total, "total_lines": total, "truncated": False,
        "next_offset": max(len(data), 1000), "modified_at": rfc3339(mtime),
        "stale_note": stale_note(mtime, now),
    }
    room = RESPONSE_MAX_BYTES - encoded_size(response)
    stop = begin
    while stop < limit:
        newline = data.find(b"\n", stop, limit)
        line_stop = limit if newline < 0 else newline + 1
        cost = escaped_size(data[stop:line_stop])
        if cost > room:
            break
        room -= cost
        stop = line_stop
    if stop == begin and begin < limit:
        stop = _longest_prefix(data, begin, limit, room)

    truncated = stop < limit
    response["content"] = data[begin:stop].decode("utf-8")
    response["start_line"] = data.count(b"\n", 0, begin) + 1 if stop > begin else 0
    response["end_line"] = data.count(b"\n", 0, stop - 1) + 1 if stop > begin else 0
    response["truncated"] = truncated
    response["next_offset"] = stop if truncated else None
    return response


def _longest_prefix(data: bytes, begin: int, limit: int, room: int) -> int:
    """End of the longest character-aligned slice from `begin` whose escape fits `room`."""
    low, high = begin, limit
    while low < high:
        middle = (low + high + 1) // 2
        if escaped_size(data[begin : char_start(data, middle)]) <= room:
            low = middle
        else:
            high = middle - 1
    return char_start(data, low)
