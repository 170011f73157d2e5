"""Line and character arithmetic on UTF-8 bytes, shared by reads, quotas and search."""

from __future__ import annotations


def line_count(data: bytes) -> int:
    """SPEC Appendix A: the count of `\\n`, plus one if non-empty and not ending in `\\n`."""
    count = data.count(b"\n")
    if data and not data.endswith(b"\n"):
        count += 1
    return count


def char_start(data: bytes, index: int) -> int:
    """The nearest UTF-8 character boundary at or before `index`."""
    while 0 < index < len(data) and (data[index] & 0xC0) == 0x80:
        index -= 1
    return index


def next_char_start(data: bytes, index: int) -> int:
    """The nearest UTF-8 character boundary at or after `index`."""
    while 0 < index < len(data) and (data[index] & 0xC0) == 0x80:
        index += 1
    return index


def is_char_boundary(data: bytes, index: int) -> bool:
    return index == len(data) or (0 <= index < len(data) and (data[index] & 0xC0) != 0x80)
