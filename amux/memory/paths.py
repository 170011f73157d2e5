"""Logical memory paths (SPEC §2): the only names a caller may give a document.

A logical path is relative, `/`-separated and ends in `.md`; it has no empty, `.`
or `..` segment, no segment starting with `.` (reserved for the store's own files),
no backslash, NUL, control character or invisible format character (zero-width,
bidi control: they make look-alike names); each segment is at most 255 bytes and the
whole path at most 1,024 bytes of UTF-8. Validation is purely lexical; symlinks are
refused later, on the real file system, by `amux.memory.fs`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from amux.errors import InvalidPath, shown
from amux.memory.limits import PATH_MAX_BYTES, SEGMENT_MAX_BYTES
from amux.protocol.render import GUIDE_PATH


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


_FORMAT = (
    "\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890-\u0891\u08e2\u180e\u200b-\u200f"
    "\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd"
    "\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001"
    "\U000e0020-\U000e007f"
)
"""The Unicode format characters (category Cf, Unicode 15.1): zero-width spaces and
joiners, bidirectional controls, soft hyphen, tags. They are invisible, so with them
two different paths look the same to a person and to an agent (`notes/a<U+200B>.md`
and `notes/a.md`), and bidi controls make a path read in another order than it is stored."""
_FORBIDDEN = re.compile("[\x00-\x1f\x7f-\x9f\\\\\ud800-\udfff" + _FORMAT + "]")
"""Backslash, control characters (Cc), invisible format characters (Cf), lone surrogates."""
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
        return f"segment {shown(segment)} starts with '.' (reserved)"
    bad = _FORBIDDEN.search(segment)
    if bad is not None:
        char = bad.group()
        if char == "\\":
            return "backslash is not a separator; use '/'"
        if "\ud800" <= char <= "\udfff":
            return "not valid UTF-8 (lone surrogate)"
        if ord(char) > 0x9F:
            return (f"invisible format character U+{ord(char):04X} (zero-width or bidi "
                    "control): it makes look-alike names; remove it")
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
    if path == GUIDE_PATH:
        raise InvalidPath(path, "amux's note guide is read-only (read it with get); save "
                          "notes at paths of your own")
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
