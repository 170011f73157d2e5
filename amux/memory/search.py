"""Bounded literal search over one scope (SPEC §3 and Appendix A).

Terms are literal byte strings: the query is split on Unicode whitespace, ASCII
letters fold case (`bytes.lower` touches nothing else, so CJK and other text
compare exactly) and there is no regex, glob or tokenizer. Everything stays in
bytes; only the few returned snippets are decoded.

Files are scanned in bytewise path order within the budgets of SPEC §2 (1,024
files, 8 MiB, 250 ms, 4,096 directory entries); a search stopped by a budget says
`incomplete`. `SearchCache` keeps recently read documents in memory so a store
answering repeated searches need not re-read unchanged files: every entry is
checked against the file's `lstat` (inode, size, mtime, ctime) on every search,
the cache is bounded in bytes and is never persisted, so the files stay the only
truth.
"""

from __future__ import annotations

import os
import stat
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from amux.memory import fs
from amux.memory.errors import InvalidArgument, InvalidPath
from amux.memory.limits import (
    HITS_PER_DOCUMENT,
    MIB,
    QUERY_MAX_BYTES,
    QUERY_MAX_TERMS,
    RESPONSE_MAX_BYTES,
    SCAN_MAX_BYTES,
    SCAN_MAX_DIR_ENTRIES,
    SCAN_MAX_FILES,
    SCAN_MAX_SECONDS,
    SEARCH_DEFAULT_LIMIT,
    SEARCH_MAX_LIMIT,
    SNIPPET_MAX_BYTES,
)
from amux.memory.lines import char_start
from amux.memory.revision import revision_of
from amux.memory.wire import encoded_size

Clock = Callable[[], float]
StatKey = tuple[int, int, int, int]
_MEMO_MAX_TERMS = 64
_SNIPPET_LEAD = 60
"""Bytes of context kept before the first match when a long line is cut."""


@dataclass(frozen=True)
class Query:
    """Validated search terms: what the caller typed and its ASCII-folded bytes."""

    terms: tuple[str, ...]
    folded: tuple[bytes, ...]


def parse_query(query: object) -> Query:
    """Split a query on Unicode whitespace into 1–16 distinct literal terms (≤ 512 bytes)."""
    if not isinstance(query, str):
        raise InvalidArgument(f"query must be a string, got {type(query).__name__}")
    try:
        size = len(query.encode("utf-8"))
    except UnicodeEncodeError:
        raise InvalidArgument("query is not valid UTF-8 (lone surrogate)") from None
    if size > QUERY_MAX_BYTES:
        raise InvalidArgument(f"query is {size} bytes; the limit is {QUERY_MAX_BYTES}")
    words = query.split()
    if not words:
        raise InvalidArgument("query has no terms: give 1 to 16 whitespace-separated words")
    if len(words) > QUERY_MAX_TERMS:
        raise InvalidArgument(
            f"query has {len(words)} terms; the limit is {QUERY_MAX_TERMS}: search for fewer"
        )
    terms: list[str] = []
    folded: list[bytes] = []
    for word in words:
        key = word.encode("utf-8").lower()
        if key not in folded:
            terms.append(word)
            folded.append(key)
    return Query(tuple(terms), tuple(folded))


def check_limit(limit: object) -> int:
    """The number of documents to return: default 5, 1–20."""
    if limit is None:
        return SEARCH_DEFAULT_LIMIT
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= SEARCH_MAX_LIMIT:
        raise InvalidArgument(
            f"limit must be an integer from 1 to {SEARCH_MAX_LIMIT}, got {limit!r}"
        )
    return limit


@dataclass
class CachedDocument:
    """A document's bytes as last read, with derived values computed on demand."""

    key: StatKey
    raw: bytes
    folded: bytes
    memo: dict[bytes, bool] = field(default_factory=dict)
    _title: bytes | None = None
    _revision: str | None = None

    def contains(self, term: bytes) -> bool:
        found = self.memo.get(term)
        if found is None:
            found = term in self.folded
            if len(self.memo) >= _MEMO_MAX_TERMS:
                self.memo.clear()
            self.memo[term] = found
        return found

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


def _stat_key(st: os.stat_result) -> StatKey:
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


class SearchCache:
    """Bounded LRU of documents read by searches, keyed by (scope, path)."""

    def __init__(self, max_bytes: int = 64 * MIB) -> None:
        self.max_bytes = max_bytes
        self._entries: OrderedDict[tuple[str, str], CachedDocument] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    @property
    def size_bytes(self) -> int:
        return self._bytes

    def get(self, scope: str, path: str, key: StatKey) -> CachedDocument | None:
        with self._lock:
            document = self._entries.get((scope, path))
            if document is None:
                return None
            if document.key != key:
                self._drop((scope, path))
                return None
            self._entries.move_to_end((scope, path))
            return document

    def put(self, scope: str, path: str, document: CachedDocument) -> None:
        cost = len(document.raw) + len(document.folded)
        if cost > self.max_bytes:
            return
        with self._lock:
            self._drop((scope, path))
            self._entries[(scope, path)] = document
            self._bytes += cost
            while self._bytes > self.max_bytes:
                self._drop(next(iter(self._entries)))

    def _drop(self, entry: tuple[str, str]) -> None:
        document = self._entries.pop(entry, None)
        if document is not None:
            self._bytes -= len(document.raw) + len(document.folded)


@dataclass
class _Candidate:
    path: str
    document: CachedDocument
    content_terms: list[int]
    matched: list[int]
    path_hit: bool
    rank: tuple[int, int, bytes]


@dataclass
class _Scan:
    scanned_files: int = 0
    scanned_bytes: int = 0
    incomplete: bool = False
    candidates: list[_Candidate] = field(default_factory=list)


def search(
    scope_fd: int,
    scope_key: str,
    query: Query,
    prefix: tuple[str, ...],
    limit: int,
    cache: SearchCache,
    clock: Clock,
) -> dict[str, Any]:
    """Search the scope open at `scope_fd`; returns the Appendix A response."""
    started = clock()
    scan = _Scan()
    prefix_text = "/".join(prefix)
    parent = fs.open_dirs(scope_fd, prefix[:-1], prefix_text) if prefix else os.dup(scope_fd)
    with fs.opened(parent):
        if parent is not None:
            if prefix:
                _scan_prefix(parent, prefix, scope_key, query, cache, clock, started, scan)
            else:
                _scan_tree(fs.TreeWalk(parent, "", SCAN_MAX_DIR_ENTRIES), scope_key, query,
                           cache, clock, started, scan)
    return _respond(scan, query, limit)


def _scan_prefix(
    parent: int, prefix: tuple[str, ...], scope_key: str, query: Query, cache: SearchCache,
    clock: Clock, started: float, scan: _Scan,
) -> None:
    """Scan the directory (or the single document) a `path_prefix` names."""
    last = prefix[-1]
    label = "/".join(prefix)
    try:
        info = os.stat(last, dir_fd=parent, follow_symlinks=False)
    except FileNotFoundError:
        return
    if stat.S_ISLNK(info.st_mode):
        raise InvalidPath(label, f"'{last}' is a symlink; symlinks are refused")
    if stat.S_ISDIR(info.st_mode):
        child = fs.open_dir_at(parent, last, label)
        with fs.opened(child):
            if child is not None:
                walk = fs.TreeWalk(child, label + "/", SCAN_MAX_DIR_ENTRIES)
                _scan_tree(walk, scope_key, query, cache, clock, started, scan)
    elif fs.is_document_name(last) and stat.S_ISREG(info.st_mode):
        _scan_one(parent, last, label, info, scope_key, query, cache, scan)


def _scan_tree(
    walk: fs.TreeWalk, scope_key: str, query: Query, cache: SearchCache, clock: Clock,
    started: float, scan: _Scan,
) -> None:
    for found in walk:
        try:
            st = found.entry.stat(follow_symlinks=False)
        except FileNotFoundError:
            continue
        if (
            scan.scanned_files >= SCAN_MAX_FILES
            or scan.scanned_bytes + st.st_size > SCAN_MAX_BYTES
            or clock() - started > SCAN_MAX_SECONDS
        ):
            scan.incomplete = True
            return
        _scan_one(found.dir_fd, found.name, found.path, st, scope_key, query, cache, scan)
    if walk.stopped_early:
        scan.incomplete = True


def _scan_one(
    dir_fd: int, name: str, path: str, st: os.stat_result, scope_key: str, query: Query,
    cache: SearchCache, scan: _Scan,
) -> None:
    document = cache.get(scope_key, path, _stat_key(st))
    if document is None:
        try:
            read = fs.read_at(dir_fd, name, path)
        except InvalidPath:
            return  # became a symlink or a directory since listing: never followed
        if read is None:
            return
        raw, fst = read
        document = CachedDocument(_stat_key(fst), raw, raw.lower())
        cache.put(scope_key, path, document)
    scan.scanned_files += 1
    scan.scanned_bytes += len(document.raw)
    path_folded = path.encode("utf-8").lower()
    content_terms = [i for i, term in enumerate(query.folded) if document.contains(term)]
    path_terms = [i for i, term in enumerate(query.folded) if term in path_folded]
    if not content_terms and not path_terms:
        return
    matched = sorted(set(content_terms) | set(path_terms))
    title = document.title
    titled = sum(1 for i in matched if i in path_terms or query.folded[i] in title)
    rank = (-len(matched), -titled, path.encode("utf-8"))
    scan.candidates.append(
        _Candidate(path, document, content_terms, matched, bool(path_terms), rank)
    )


def _respond(scan: _Scan, query: Query, limit: int) -> dict[str, Any]:
    scan.candidates.sort(key=lambda candidate: candidate.rank)
    truncated = len(scan.candidates) > limit
    results = []
    for candidate in scan.candidates[:limit]:
        hits, more = _hits(candidate.document, [query.folded[i] for i in candidate.content_terms])
        truncated = truncated or more
        results.append({
            "path": candidate.path,
            "revision": candidate.document.revision,
            "matched_terms": [query.terms[i] for i in candidate.matched],
            "path_hit": candidate.path_hit,
            "hits": hits,
        })
    response = {
        "results": results,
        "scanned_files": scan.scanned_files,
        "incomplete": scan.incomplete,
        "truncated": truncated,
    }
    return _fit(response)


def _hits(document: CachedDocument, terms: list[bytes]) -> tuple[list[dict[str, Any]], bool]:
    """The first matching lines (at most 3) and whether more lines matched."""
    folded = document.folded
    lines: dict[int, tuple[int, int]] = {}  # line start -> (line end, first match)
    for term in terms:
        position = 0
        for _ in range(HITS_PER_DOCUMENT + 1):
            found = folded.find(term, position)
            if found < 0:
                break
            start = folded.rfind(b"\n", 0, found) + 1
            end = folded.find(b"\n", found)
            end = len(folded) if end < 0 else end
            known = lines.get(start)
            lines[start] = (end, found if known is None else min(known[1], found))
            position = end + 1
    starts = sorted(lines)
    hits = []
    for start in starts[:HITS_PER_DOCUMENT]:
        end, first = lines[start]
        snippet, cut = _snippet(document.raw, start, end, first)
        hits.append({"line": folded.count(b"\n", 0, start) + 1, "snippet": snippet,
                     "truncated": cut})
    return hits, len(starts) > HITS_PER_DOCUMENT


def _snippet(raw: bytes, start: int, end: int, first: int) -> tuple[str, bool]:
    """A line as text, cut to 240 bytes around its first match on character boundaries."""
    if end > start and raw[end - 1 : end] == b"\r":
        end -= 1
    if end - start <= SNIPPET_MAX_BYTES:
        return raw[start:end].decode("utf-8", "replace"), False
    begin = max(start, min(first - _SNIPPET_LEAD, end - SNIPPET_MAX_BYTES))
    begin = char_start(raw, begin)
    if begin < start:
        begin = start
    stop = char_start(raw, begin + SNIPPET_MAX_BYTES)
    return raw[begin:stop].decode("utf-8", "replace"), True


def _fit(response: dict[str, Any]) -> dict[str, Any]:
    """Drop trailing hits, then trailing results, until the response fits 8 KiB."""
    results: list[dict[str, Any]] = response["results"]
    while encoded_size(response) > RESPONSE_MAX_BYTES:
        response["truncated"] = True
        with_hits = [result for result in results if result["hits"]]
        if with_hits:
            with_hits[-1]["hits"].pop()
        elif results:
            results.pop()
        else:  # pragma: no cover - an empty response is far below the budget
            break
    return response
