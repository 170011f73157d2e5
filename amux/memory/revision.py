"""Revisions (SPEC §2): lowercase hex SHA-256 of a document's bytes, `absent` when missing."""

from __future__ import annotations

import hashlib
import re
import threading
from collections import OrderedDict

from amux.errors import InvalidArgument

ABSENT = "absent"
_HEX64 = re.compile(r"[0-9a-f]{64}")


def revision_of(data: bytes) -> str:
    """The revision of a document whose bytes are `data`."""
    return hashlib.sha256(data).hexdigest()


def check_expected(revision: object, field: str = "expected_revision") -> str:
    """Validate a revision argument, named `field` in the error: `absent` or 64 lowercase
    hex digits."""
    if isinstance(revision, str) and (revision == ABSENT or _HEX64.fullmatch(revision)):
        return revision
    raise InvalidArgument(
        f"{field} must be 'absent' or a lowercase hex SHA-256, got {revision!r}"
    )


class RecentRevisions:
    """Revisions of the bytes this store wrote last, per document, bounded.

    A conditional write must know the current revision; when the bytes on disk are
    still exactly the bytes we wrote, comparing them (a memcmp) proves the revision
    without hashing them again. Any other bytes are hashed as usual, so this can
    never vouch for content it did not see. Each entry also says whether the secret
    guard found nothing at all in those bytes (`clean`), so the next write of that
    document need only be scanned where it changes them. Safe for many threads.
    """

    def __init__(self, max_bytes: int = 4 * 1024 * 1024) -> None:
        self.max_bytes = max_bytes
        self._entries: OrderedDict[tuple[str, str], tuple[bytes, str, bool]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def revision(self, key: tuple[str, str], data: bytes) -> str:
        """The revision of `data`, the current bytes of document `key`."""
        with self._lock:
            known = self._entries.get(key)
        if known is not None and known[0] == data:
            return known[1]
        return revision_of(data)

    def clean(self, key: tuple[str, str]) -> bytes | None:
        """The bytes this store last wrote to `key`, if still held and the guard found
        nothing in them."""
        with self._lock:
            known = self._entries.get(key)
        return known[0] if known is not None and known[2] else None

    def remember(self, key: tuple[str, str], data: bytes | None, revision: str = ABSENT,
                 clean: bool = False) -> None:
        """Record what `key` now holds (None: deleted), and whether it is `clean`."""
        with self._lock:
            self._remember(key, data, revision, clean)

    def _remember(self, key: tuple[str, str], data: bytes | None, revision: str,
                  clean: bool) -> None:
        old = self._entries.pop(key, None)
        if old is not None:
            self._bytes -= len(old[0])
        if data is None or len(data) > self.max_bytes:
            return
        self._entries[key] = (data, revision, clean)
        self._bytes += len(data)
        while self._bytes > self.max_bytes:
            _key, (dropped, _revision, _clean) = self._entries.popitem(last=False)
            self._bytes -= len(dropped)
