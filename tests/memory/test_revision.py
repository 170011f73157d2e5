"""Revisions: SHA-256 of the bytes, `absent`, and the recent-writes shortcut."""

from __future__ import annotations

import hashlib

import pytest

from amux.errors import InvalidArgument
from amux.memory.revision import ABSENT, RecentRevisions, check_expected, revision_of


def test_revision_is_lowercase_hex_sha256() -> None:
    assert revision_of(b"x") == hashlib.sha256(b"x").hexdigest()
    assert check_expected(ABSENT) == "absent"
    assert check_expected("a" * 64) == "a" * 64
    with pytest.raises(InvalidArgument):
        check_expected("A" * 64)


def test_recent_revisions_compare_bytes_and_stay_bounded() -> None:
    recent = RecentRevisions(max_bytes=10)
    recent.remember(("global", "a.md"), b"12345", "rev-a")
    assert recent.revision(("global", "a.md"), b"12345") == "rev-a"
    assert recent.revision(("global", "a.md"), b"12346") == revision_of(b"12346")
    assert recent.revision(("other", "a.md"), b"12345") == revision_of(b"12345")
    recent.remember(("global", "b.md"), b"678901", "rev-b")  # 11 bytes in all: a.md goes
    assert recent.revision(("global", "a.md"), b"12345") == revision_of(b"12345")
    assert recent.revision(("global", "b.md"), b"678901") == "rev-b"
    recent.remember(("global", "b.md"), None)  # deleted
    assert recent.revision(("global", "b.md"), b"678901") == revision_of(b"678901")
    recent.remember(("global", "c.md"), b"x" * 11, "too-big")  # larger than the bound
    assert recent.revision(("global", "c.md"), b"x" * 11) == revision_of(b"x" * 11)
