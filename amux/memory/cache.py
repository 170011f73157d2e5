"""What searches remember between calls: documents and directory listings, per scope.

A store answering repeated searches need not re-read unchanged files. Everything
here is validated against the file system on every search (a document against its
`lstat` key, a listing against its directory's `fstat`), only settled files are
kept (`fs.settled`: nothing changed in the last second, when a second change could
still keep the same timestamps), the whole cache is bounded in bytes and nothing
is ever persisted: the Markdown files stay the only truth.
"""

from __future__ import annotations

import itertools
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


POSTINGS_MAX_ENTRIES = 1 << 18
"""(term, document) answers a scope's `Postings` keep, about 8 MiB; past it the least
recently searched terms are forgotten first (900 terms for 300 documents)."""
_serials = itertools.count()


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
    serial: int = field(default_factory=_serials.__next__)
    """Unique for the life of the process: what `Postings` remember a document by (a
    changed document is a new object with a new serial)."""
    _title: bytes | None = None
    _revision: str | None = None

    @property
    def cost(self) -> int:
        return len(self.raw) + len(self.folded)

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


class Posting:
    """Which documents (serials) contain one term, in content and in path, of those
    checked so far. Written by one search at a time per document and read without a
    lock: a serial goes into `checked` only after its answer is recorded."""

    __slots__ = ("checked", "content", "path", "term")

    def __init__(self, term: bytes) -> None:
        self.term = term
        self.checked: set[int] = set()
        self.content: set[int] = set()
        self.path: set[int] = set()

    def check(self, document: CachedDocument) -> None:
        serial = document.serial
        if serial in self.checked:
            return
        if self.term in document.folded:
            self.content.add(serial)
        if self.term in document.folded_path:
            self.path.add(serial)
        self.checked.add(serial)


class Postings:
    """A scope's recent search terms and the documents containing them, so a search of
    known words scans no document again: only documents new or changed since (a new
    serial) are checked for a term. Held in memory only, bounded in terms."""

    def __init__(self) -> None:
        self._terms: OrderedDict[bytes, Posting] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, term: bytes, documents: int) -> Posting:
        """The posting of `term`; begun again once it remembers four times more
        documents than the scope has (those of changed documents, no longer there)."""
        with self._lock:
            posting = self._terms.get(term)
            if posting is None or len(posting.checked) > 4 * documents + 64:
                posting = self._terms[term] = Posting(term)
                entries = sum(len(known.checked) for known in self._terms.values())
                while entries + documents > POSTINGS_MAX_ENTRIES and len(self._terms) > 1:
                    entries -= len(self._terms.popitem(last=False)[1].checked)
            self._terms.move_to_end(term)
            return posting


@dataclass
class ScopeCache:
    """What searches of one scope remember: documents, directory listings, and which
    documents contain recent terms."""

    documents: dict[str, CachedDocument] = field(default_factory=dict)
    listings: fs.ListingCache = field(default_factory=dict)
    postings: Postings = field(default_factory=Postings)

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
