"""Logical memory paths (SPEC §2): the only names a caller may give a document.

A logical path is relative, `/`-separated and ends in `.md`; it has no empty, `.`
or `..` segment, no segment starting with `.` (reserved for the store's own files),
no backslash, NUL or control character; each segment is at most 255 bytes and the
whole path at most 1,024 bytes of UTF-8. Validation is purely lexical; symlinks are
refused later, on the real file system, by `amux.memory.fs`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from amux.memory.errors import InvalidPath
from amux.memory.limits import PATH_MAX_BYTES, SEGMENT_MAX_BYTES


@dataclass(frozen=True)
class LogicalPath:
    """A validated document path inside a scope."""

    text: str
    segments: tuple[str, ...]

    @property
    def parents(self) -> tuple[str, ...]:
        return self.segments[:-1]

    @property
    def name(self) -> str:
        return self.segments[-1]


_FORBIDDEN = re.compile(r"[\x00-\x1f\x7f-\x9f\\\ud800-\udfff]")
"""Backslash, the Unicode control characters (category Cc) and lone surrogates."""
_SAFE_LENGTH = SEGMENT_MAX_BYTES // 4
"""Characters that fit the segment byte limit whatever they are (UTF-8 is ≤ 4 bytes each)."""


def segment_problem(segment: str) -> str | None:
    """Why `segment` cannot be one segment of a logical path, or None when it can.

    Ordered cheapest first: search calls this for every directory entry it lists.
    """
    if segment == "":
        return "empty segment"
    if segment[0] == ".":
        if segment in (".", ".."):
            return f"'{segment}' segment"
        return f"segment {segment!r} starts with '.' (reserved)"
    bad = _FORBIDDEN.search(segment)
    if bad is not None:
        char = bad.group()
        if char == "\\":
            return "backslash is not a separator; use '/'"
        if "\ud800" <= char <= "\udfff":
            return "not valid UTF-8 (lone surrogate)"
        return f"control character U+{ord(char):04X}"
    if len(segment) > _SAFE_LENGTH:
        size = len(segment.encode("utf-8"))
        if size > SEGMENT_MAX_BYTES:
            return f"a segment is {size} bytes; the limit is {SEGMENT_MAX_BYTES}"
    return None


def _check_segments(original: str, text: str) -> tuple[str, ...]:
    bad = _FORBIDDEN.search(text)
    if bad is not None:
        raise InvalidPath(original, segment_problem(bad.group()) or "forbidden character")
    size = len(text.encode("utf-8"))
    if size > PATH_MAX_BYTES:
        raise InvalidPath(original, f"path is {size} bytes; the limit is {PATH_MAX_BYTES}")
    segments = tuple(text.split("/"))
    for segment in segments:
        problem = segment_problem(segment)
        if problem is not None:
            raise InvalidPath(original, problem)
    return segments


def validate_path(path: str) -> LogicalPath:
    """Return `path` as a `LogicalPath`, or raise `InvalidPath` naming the rule it breaks."""
    if not isinstance(path, str):
        raise InvalidPath(repr(path), "path must be a string")
    if path == "":
        raise InvalidPath(path, "empty path")
    if path.startswith("/"):
        raise InvalidPath(path, "absolute path; paths are relative to the memory scope")
    segments = _check_segments(path, path)
    if not path.endswith(".md"):
        raise InvalidPath(path, "documents are Markdown: the path must end in '.md'")
    return LogicalPath(path, segments)


def validate_prefix(prefix: str | None) -> tuple[str, ...]:
    """Segments of a search `path_prefix` (whole segments; a trailing '/' is allowed).

    `None` or "" means the whole scope and returns `()`.
    """
    if prefix is None or prefix == "":
        return ()
    if not isinstance(prefix, str):
        raise InvalidPath(repr(prefix), "path_prefix must be a string")
    if prefix.startswith("/"):
        raise InvalidPath(prefix, "absolute path; prefixes are relative to the memory scope")
    text = prefix[:-1] if prefix.endswith("/") else prefix
    return _check_segments(prefix, text)
