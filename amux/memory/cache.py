"""What searches remember between calls: documents and directory listings, per scope.

A store answering repeated searches need not re-read unchanged files. Everything
here is validated against the file system on every search (a document against its
`lstat` key, a listing against its directory's `fstat`), only settled files are
kept (`fs.settled`: nothing changed in the last second, when a second change could
still keep the same timestamps), the whole cache is bounded in bytes and nothing
is ever persisted: the Markdown files stay the only truth.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from dataclasses import dataclass, field

from amux.memory import fs
from amux.memory.limits import MIB, SCAN_MAX_DIR_ENTRIES
from amux.memory.revision import revision_of

StatKey = tuple[int, int, int, int]
"""(inode, size, mtime ns, ctime ns) of a document when it was read."""


def stat_key(st: os.stat_result) -> StatKey:
    """The key a cached document is validated by on every search."""
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
_MEMO_MAX_ENTRIES = 64


@dataclass(frozen=True, slots=True)
class TermMatch:
    """Indexes (into the query's terms) found in a document's content and path."""

    content: tuple[int, ...]
    in_path: tuple[int, ...]
    matched: tuple[int, ...]


@dataclass(slots=True)
class CachedDocument:
    """A document's bytes as last read, with derived values computed on demand."""

    key: StatKey
    raw: bytes
    folded: bytes
    folded_path: bytes
    _terms: dict[bytes, bool] = field(default_factory=dict)
    _queries: dict[tuple[bytes, ...], TermMatch | None] = field(default_factory=dict)
    _title: bytes | None = None
    _revision: str | None = None

    @property
    def cost(self) -> int:
        return len(self.raw) + len(self.folded)

    def match(self, terms: tuple[bytes, ...]) -> TermMatch | None:
        """Which terms the content and the path contain; None when no term matches."""
        if terms in self._queries:
            return self._queries[terms]
        memo = self._terms
        content = []
        for index, term in enumerate(terms):
            found = memo.get(term)
            if found is None:
                found = memo[term] = term in self.folded
            if found:
                content.append(index)
        in_path = [index for index, term in enumerate(terms) if term in self.folded_path]
        known = None
        if content or in_path:
            matched = sorted({*content, *in_path}) if in_path else content
            known = TermMatch(tuple(content), tuple(in_path), tuple(matched))
        if len(self._queries) >= _MEMO_MAX_ENTRIES:
            self._queries.clear()
        if len(memo) >= _MEMO_MAX_ENTRIES:
            memo.clear()
        self._queries[terms] = known
        return known

    @property
    def title(self) -> bytes:
        """Folded `name:` of the front matter and the first heading, newline-joined."""
        if self._title is None:
            self._title = _title_of(self.folded)
        return self._title

    @property
    def revision(self) -> str:
        if self._revision is None:
            self._revision = revision_of(self.raw)
        return self._revision


def _title_of(folded: bytes) -> bytes:
    parts = []
    body = 0
    if folded.startswith(b"---\n") or folded.startswith(b"---\r\n"):
        close = folded.find(b"\n---", 3)
        if close > 0:
            for line in folded[4:close].splitlines():
                if line.startswith(b"name:"):
                    parts.append(line[5:].strip())
                    break
            body = close + 4
    position = body
    while position < len(folded):
        end = folded.find(b"\n", position)
        end = len(folded) if end < 0 else end
        line = folded[position:end]
        if line.startswith(b"#"):
            heading = line.lstrip(b"#")
            if len(line) - len(heading) <= 6 and (heading == b"" or heading[:1] in b" \t"):
                parts.append(heading.strip())
                break
        position = end + 1
    return b"\n".join(parts)


@dataclass
class ScopeCache:
    """What searches of one scope remember: documents and directory listings."""

    documents: dict[str, CachedDocument] = field(default_factory=dict)
    listings: fs.ListingCache = field(default_factory=dict)

    def cost(self) -> int:
        return sum(document.cost for document in self.documents.values())


_MAX_LISTINGS = 2 * SCAN_MAX_DIR_ENTRIES
"""A walk lists at most 4,096 directories; more cached listings are of deleted ones."""


class SearchCache:
    """Documents read by searches, per scope, bounded in bytes, never persisted.

    Lookups take no lock (a dict read is atomic); entries are always validated by
    the caller against the file's current `lstat` key, and only files whose
    timestamps have settled are cached (`fs.settled`). When a new document does not
    fit, the least recently searched other scopes are dropped first.
    """

    def __init__(self, max_bytes: int = 64 * MIB) -> None:
        self.max_bytes = max_bytes
        self._scopes: OrderedDict[str, ScopeCache] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    @property
    def size_bytes(self) -> int:
        return self._bytes

    def scope(self, scope: str) -> ScopeCache:
        """The cache of one scope; callers read it and add through `put`."""
        with self._lock:
            cached = self._scopes.get(scope)
            if cached is None:
                cached = self._scopes[scope] = ScopeCache()
            elif len(cached.listings) > _MAX_LISTINGS:
                cached.listings.clear()
            self._scopes.move_to_end(scope)
            return cached

    def put(self, scope: str, path: str, document: CachedDocument) -> None:
        with self._lock:
            cached = self._scopes.get(scope)
            if cached is None:
                return  # evicted meanwhile: not worth re-adding mid-search
            old = cached.documents.pop(path, None)
            if old is not None:
                self._bytes -= old.cost
            while self._bytes + document.cost > self.max_bytes and len(self._scopes) > 1:
                victim, dropped = next(iter(self._scopes.items()))
                if victim == scope:
                    self._scopes.move_to_end(scope)
                    continue
                del self._scopes[victim]
                self._bytes -= dropped.cost()
            if self._bytes + document.cost <= self.max_bytes:
                cached.documents[path] = document
                self._bytes += document.cost

    def prune(self, scope: str, keep: set[str]) -> None:
        """Forget documents of `scope` that a complete scan no longer found."""
        with self._lock:
            documents = self._scopes.get(scope, ScopeCache()).documents
            for path in [path for path in documents if path not in keep]:
                self._bytes -= documents.pop(path).cost
