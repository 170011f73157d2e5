"""Revisions (SPEC §2): lowercase hex SHA-256 of a document's bytes, `absent` when missing."""

from __future__ import annotations

import hashlib
import re

from amux.memory.errors import InvalidArgument

ABSENT = "absent"
_HEX64 = re.compile(r"[0-9a-f]{64}")


def revision_of(data: bytes) -> str:
    """The revision of a document whose bytes are `data`."""
    return hashlib.sha256(data).hexdigest()


def check_expected(revision: object) -> str:
    """Validate an `expected_revision` argument: `absent` or 64 lowercase hex digits."""
    if isinstance(revision, str) and (revision == ABSENT or _HEX64.fullmatch(revision)):
        return revision
    raise InvalidArgument(
        f"expected_revision must be 'absent' or a lowercase hex SHA-256, got {revision!r}"
    )
