"""Bounded literal search over one scope (SPEC §3 and Appendix A).

Terms are literal byte strings: the query is split on Unicode whitespace, ASCII
letters fold case (`bytes.lower` touches nothing else, so CJK and other text
compare exactly) and there is no regex, glob or tokenizer. Everything stays in
bytes; only the few returned snippets are decoded.

Files are scanned in bytewise path order within the budgets of SPEC §2 (1,024
files, 8 MiB, 250 ms, 4,096 directory entries); a search stopped by a budget says
`incomplete`. Documents and listings already read come from `amux.memory.cache`,
validated against the files on every search.
"""

from __future__ import annotations

import heapq
import os
import re
import stat
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from amux.encoding import encoded_size
from amux.errors import InvalidArgument, InvalidPath
from amux.memory import fs
from amux.memory.cache import CachedDocument, SearchCache, TermMatch, stat_key
from amux.memory.limits import (
    HITS_PER_DOCUMENT,
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
from amux.memory.lines import char_start, next_char_start

Clock = Callable[[], float]
_WHITESPACE = re.compile(
    "[\t\n\x0b\x0c\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+"
)
"""The Unicode White_Space property (str.split() would also split on U+001C-U+001F)."""
_SNIPPET_LEAD = 60
"""Bytes of context kept before the first match when a long line is cut."""
_LINE_HIT = QUERY_MAX_TERMS
"""Added to a document's count of terms matched when a line of it matched one: more than
any count of terms matched in a path alone."""


class Searcher(Protocol):
    """How a `Store` has one search run over a scope directory it opened: `search` with
    its own cache, or the Hub's search process (`amux.hub.searcher`)."""

    def __call__(self, scope_fd: int, scope_key: str, query: Query,
                 prefix: tuple[str, ...], limit: int) -> dict[str, Any]: ...


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
    words = [word for word in _WHITESPACE.split(query) if word]
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


def check_limit(
    limit: object, default: int = SEARCH_DEFAULT_LIMIT, maximum: int = SEARCH_MAX_LIMIT
) -> int:
    """The number of documents to return: `default` when None, else 1 to `maximum`."""
    if limit is None:
        return default
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= maximum:
        raise InvalidArgument(f"limit must be an integer from 1 to {maximum}, got {limit!r}")
    return limit


@dataclass
class _Candidate:
    path: str
    document: CachedDocument
    match: TermMatch


class _Scanner:
    """One search's walk over a scope: budgets, cache lookups and candidates."""

    def __init__(self, scope_key: str, query: Query, cache: SearchCache, clock: Clock) -> None:
        self.scope_key = scope_key
        self.query = query
        self.cache = cache
        self.scope_cache = cache.scope(scope_key)
        self.clock = clock
        self.started = clock()
        self.now_ns = time.time_ns()
        self.scanned_files = 0
        self.scanned_bytes = 0
        self.incomplete = False
        self.seen: set[str] = set()
        self.scanned: dict[int, tuple[str, CachedDocument]] = {}
        """Serial → (path, document) of every document scanned, in scan order."""
        documents = len(self.scope_cache.documents)
        self.postings = [self.scope_cache.postings.get(term, documents)
                         for term in query.folded]

    def prefix(self, parent: int, prefix: tuple[str, ...]) -> None:
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
            with fs.opened(fs.open_dir_at(parent, last, label)) as child:
                if child is not None:
                    self.tree(self.walk(child, label + "/"))
        elif fs.is_document_name(last) and stat.S_ISREG(info.st_mode):
            self.incomplete = not self.one(parent, last, label, info)

    def walk(self, dir_fd: int, prefix: str) -> fs.TreeWalk:
        return fs.TreeWalk(dir_fd, prefix, SCAN_MAX_DIR_ENTRIES, self.scope_cache.listings)

    def tree(self, walk: fs.TreeWalk) -> None:
        """Scan every document of `walk`. A cached document whose `lstat` key still
        matches is scanned right here (most documents of a warm search: this loop is
        the search's cost); any other goes through `one`."""
        one, clock, stat_ = self.one, self.clock, os.stat
        documents = self.scope_cache.documents
        seen, scanned, postings = self.seen, self.scanned, self.postings
        started = self.started
        for dir_fd, prefix, names in walk.runs():
            for name in names:
                path = prefix + name
                document = documents.get(path)
                if document is not None:
                    try:
                        st = stat_(name, dir_fd=dir_fd, follow_symlinks=False)
                    except FileNotFoundError:
                        continue
                    size = len(document.raw)
                    if (document.key == (st.st_ino, st.st_size, st.st_mtime_ns,
                                         st.st_ctime_ns)
                            and self.scanned_files < SCAN_MAX_FILES
                            and clock() - started <= SCAN_MAX_SECONDS
                            and self.scanned_bytes + size <= SCAN_MAX_BYTES):
                        self.scanned_files += 1
                        self.scanned_bytes += size
                        seen.add(path)
                        scanned[document.serial] = path, document
                        for posting in postings:
                            posting.check(document)
                        continue
                    if not one(dir_fd, name, path, st):
                        self.incomplete = True
                        return
                elif not one(dir_fd, name, path):
                    self.incomplete = True
                    return
        if walk.stopped_early:
            self.incomplete = True

    def one(self, dir_fd: int, name: str, path: str, st: os.stat_result | None = None) -> bool:
        """Scan one document; False when a budget stops the search before it.

        A cached document costs one `lstat` to validate; an unknown one is read
        straight away (its `fstat` gives the key), saving the `lstat` on cold scans.
        """
        if (
            self.scanned_files >= SCAN_MAX_FILES
            or self.clock() - self.started > SCAN_MAX_SECONDS
        ):
            return False
        document = self.scope_cache.documents.get(path)
        if document is not None:
            try:
                if st is None:
                    st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
            except FileNotFoundError:
                return True
            if document.key != stat_key(st):
                document = None
        if document is None:
            read = fs.read_listed(dir_fd, name, path)
            if read is None:
                return True
            raw, fst = read
            document = CachedDocument(stat_key(fst), raw, raw.lower(),
                                      path.encode("utf-8").lower())
            if fs.settled(fst, self.now_ns):
                self.cache.put(self.scope_key, path, document)
        if self.scanned_bytes + len(document.raw) > SCAN_MAX_BYTES:
            return False
        self.scanned_files += 1
        self.scanned_bytes += len(document.raw)
        self.seen.add(path)
        self.scanned[document.serial] = path, document
        for posting in self.postings:
            posting.check(document)
        return True

    def best(self, limit: int) -> tuple[list[_Candidate], int]:
        """The best `limit` scanned documents, and how many matched a term at all, from
        the terms' postings (set operations: no document is read here).

        Ranked by whether a line matched (a document matched by its path alone comes
        after every document with a hit: a project's folder name is in every path of it),
        distinct terms matched (desc), terms in the path or title (desc), path (asc). The
        first two keys are one count for every document at once (`Counter.update`, plus
        `_LINE_HIT` for a hit); the third, which parses titles, only for those counting at
        least as much as the `limit`-th best: no other can make the cut.
        """
        current = self.scanned.keys()
        contents = [posting.content & current for posting in self.postings]
        paths = [posting.path & current for posting in self.postings]
        either = [content | path for content, path in zip(contents, paths, strict=True)]
        counts: Counter[int] = Counter()
        for found in either:
            counts.update(found)
        for serial in set().union(*contents):
            counts[serial] += _LINE_HIT
        cut = heapq.nlargest(limit, counts.values())[-1] if len(counts) > limit else 1
        folded, scanned = self.query.folded, self.scanned

        def rank(serial: int) -> tuple[int, int, bytes]:
            path, document = scanned[serial]
            title = document.title
            titled = sum(1 for i, found in enumerate(either) if serial in found
                         and (serial in paths[i] or folded[i] in title))
            return -counts[serial], -titled, path.encode("utf-8")

        ranked = sorted((serial for serial, count in counts.items() if count >= cut),
                        key=rank)[:limit]
        best = []
        for serial in ranked:
            path, document = scanned[serial]
            content = tuple(i for i, hits in enumerate(contents) if serial in hits)
            in_path = tuple(i for i, hits in enumerate(paths) if serial in hits)
            matched = tuple(sorted({*content, *in_path})) if in_path else content
            best.append(_Candidate(path, document, TermMatch(content, in_path, matched)))
        return best, len(counts)


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
    scanner = _Scanner(scope_key, query, cache, clock)
    if not prefix:
        scanner.tree(scanner.walk(scope_fd, ""))
        if not scanner.incomplete:
            cache.prune(scope_key, scanner.seen)
    else:
        try:
            parent = fs.open_dirs(scope_fd, prefix[:-1], "/".join(prefix))
        except fs.FileInTheWay:
            parent = None  # a prefix below a document names no documents
        with fs.opened(parent):
            if parent is not None:
                scanner.prefix(parent, prefix)
    return _respond(scanner, limit)


def _respond(scan: _Scanner, limit: int) -> dict[str, Any]:
    query = scan.query
    best, matching = scan.best(limit)
    truncated = matching > limit
    results = []
    for candidate in best:
        terms = [query.folded[i] for i in candidate.match.content]
        hits, more = _hits(candidate.document, terms)
        truncated = truncated or more
        results.append({
            "path": candidate.path,
            "revision": candidate.document.revision,
            "matched_terms": [query.terms[i] for i in candidate.match.matched],
            "path_hit": bool(candidate.match.in_path),
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
    lines: dict[int, tuple[int, int, int]] = {}  # line start -> (line end, first match span)
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
            if known is None or found < known[1]:
                lines[start] = (end, found, found + len(term))
            position = end + 1
    starts = sorted(lines)
    hits = []
    for start in starts[:HITS_PER_DOCUMENT]:
        end, first, first_end = lines[start]
        snippet, cut = _snippet(document.raw, start, end, first, first_end)
        hits.append({"line": folded.count(b"\n", 0, start) + 1, "snippet": snippet,
                     "truncated": cut})
    return hits, len(starts) > HITS_PER_DOCUMENT


def _snippet(raw: bytes, start: int, end: int, first: int, first_end: int) -> tuple[str, bool]:
    """A line as text, cut to 240 bytes around its first match on character boundaries.

    The window starts up to 60 bytes before the match and always shows the whole
    match when the match itself fits in 240 bytes.
    """
    if end > start and raw[end - 1 : end] == b"\r":
        end -= 1
    if end - start <= SNIPPET_MAX_BYTES:
        return raw[start:end].decode("utf-8", "replace"), False
    begin = min(first - _SNIPPET_LEAD, end - SNIPPET_MAX_BYTES)
    begin = max(start, begin, min(first, first_end - SNIPPET_MAX_BYTES))
    begin = next_char_start(raw, begin)
    stop = char_start(raw, min(end, begin + SNIPPET_MAX_BYTES))
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
