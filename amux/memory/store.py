"""The memory store: search, get, upsert and forget over one memory root (SPEC §2–3).

The Hub owns one `Store` for its root (opened `exclusive=True`, so a second Hub on
the same root fails clearly). Every operation takes a `Scope` from
`amux.memory.scope.resolve_scope`, never a caller's string. Writes are conditional
on the SHA-256 revision and serialized per scope by a lock; reads take no lock,
since documents are only ever replaced by an atomic rename. Responses are the
dicts of SPEC Appendix A, ready for `amux.encoding.encode`.

The store is safe for many threads of one process. It is not meant to be written
by two processes at once: that is what the exclusive root lock is for.
"""

from __future__ import annotations

import builtins
import os
import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from amux import durable
from amux.errors import (
    InvalidArgument,
    InvalidPath,
    NotFound,
    NotUtf8,
    RevisionConflict,
    shown,
)
from amux.memory import documents, fs, health, quota, read, rootlock, secretguard
from amux.memory.cache import SearchCache
from amux.memory.limits import LIST_DEFAULT_LIMIT, LIST_MAX_LIMIT, SCAN_MAX_DIR_ENTRIES
from amux.memory.paths import LogicalPath, validate_path, validate_prefix
from amux.memory.quota import ScopeUsage
from amux.memory.revision import ABSENT, RecentRevisions, check_expected, revision_of
from amux.memory.scope import GLOBAL, Scope
from amux.memory.search import Clock, Query, Searcher, check_limit, parse_query, search
from amux.memory.versions import (
    LOG_DEFAULT_LIMIT,
    LOG_MAX_LIMIT,
    NOBODY,
    Author,
    Change,
    VersionStore,
    check_label,
)
from amux.protocol.render import GUIDE_PATH, guide

_COMMIT = re.compile(r"[0-9a-f]{40}")
"""A change's `commit` as log answers it (a git commit id)."""
CHANGED_FIELDS = ("at", "operation", "principal", "agent", "session")
"""What `list` shows of the change that made a document's current content."""
USAGE_TTL_SECONDS = 2.0
"""How long a scope's counted usage is trusted before a write re-counts it.

Between counts the store updates usage itself on every write it makes; the re-count
catches documents edited or added by hand while the Hub runs, without walking the
whole scope on every write (which would cost more than the write itself).
"""


class Store:
    """One memory root: `global/` and `users/<sha256(principal)>/` below it."""

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        exclusive: bool = False,
        clock: Clock = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
        cache: SearchCache | None = None,
        history: VersionStore | None = None,
    ) -> None:
        self.root = Path(root)
        self.history = history
        self.clock = clock
        self.wall_clock = wall_clock
        self.cache = cache if cache is not None else SearchCache()
        self.searcher: Searcher = self.search_here
        """Runs each search: in this process by default; the Hub sets its search process."""
        self._write_locks: dict[str, threading.Lock] = {}
        self._usage: dict[str, tuple[ScopeUsage, float]] = {}
        self._recent = RecentRevisions()
        self._guard = threading.Lock()
        self._lock_fd: int | None = None
        self.root.mkdir(mode=0o700, parents=True, exist_ok=True)
        self._root_fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            if exclusive:
                self._lock_fd = rootlock.lock_exclusive(self._root_fd, str(self.root))
                self.tidied = _tidy(self._root_fd)
            else:
                self.tidied = self._tidy_if_unserved()
        except BaseException:
            self.close()
            raise
        if history is not None:
            history.attach(self._root_fd)

    @property
    def removed_temps(self) -> int:
        """Stale `.amux-tmp-*` files the opening removed."""
        return self.tidied.removed_temps

    def _tidy_if_unserved(self) -> fs.Tidied:
        """Tidy only when no exclusive holder (a live Hub) could own the temps."""
        probe = rootlock.try_lock(self._root_fd)
        if probe is None:
            return fs.Tidied()
        try:
            return _tidy(self._root_fd)
        finally:
            os.close(probe)

    def close(self) -> None:
        """Release the root lock and the root directory."""
        for fd in (self._lock_fd, self._root_fd):
            if fd is not None and fd >= 0:
                os.close(fd)
        self._lock_fd = None
        self._root_fd = -1

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- reads ---------------------------------------------------------------------

    def search(
        self,
        scope: Scope,
        query: object,
        path_prefix: object = None,
        limit: object = None,
    ) -> dict[str, Any]:
        """Literal search; see `amux.memory.search`."""
        parsed = parse_query(query)
        prefix = _prefix(path_prefix)
        count = check_limit(limit)
        with self._scope_dir(scope, create=False) as scope_fd:
            if scope_fd is None:
                return {"results": [], "scanned_files": 0, "incomplete": False, "truncated": False}
            return self.searcher(scope_fd, scope.binding, parsed, prefix, count)

    def search_here(self, scope_fd: int, scope_key: str, query: Query,
                    prefix: tuple[str, ...], limit: int) -> dict[str, Any]:
        """One search in this process, with this store's cache (a `Searcher`)."""
        return search(scope_fd, scope_key, query, prefix, limit, self.cache, self.clock)

    def get(
        self,
        scope: Scope,
        path: str,
        start_line: object = 0,
        end_line: object = 0,
        offset: object = None,
    ) -> dict[str, Any]:
        """One bounded page of a document; see `amux.memory.read`. The protocol's note
        guide (`GUIDE_PATH`) is a read-only document of every scope."""
        if path == GUIDE_PATH:
            start, end, off = read.check_range(start_line, end_line, offset)
            now = self.wall_clock()
            return read.page(GUIDE_PATH, guide(), now, now, start, end, off)
        logical = validate_path(path)
        start, end, off = read.check_range(start_line, end_line, offset)
        with self._document_dir(scope, logical) as parent:
            found = _read(parent, logical)
        if found is None:
            return read.absent_page(logical.text)
        data, st = found
        return read.page(logical.text, data, st.st_mtime, self.wall_clock(), start, end, off)

    def list(self, scope: Scope, path_prefix: object = None, limit: object = None,
             changed: object = False, after: object = None) -> dict[str, Any]:
        """Documents under a prefix in path order, for people (`amux memory list`).

        Bounded by `limit` (default 100, at most 1,000) and by the search walk's
        directory-entry budget; `truncated` says more documents exist. Asked for
        (`changed`: a page or table for people; reads for agents never consult history),
        each document's `changed` is the change in history that made its current content
        (None: history has none, as for a hand edit it has not seen yet). `after` (a path,
        the last of a previous page) lists what comes after it in path order: the next page.
        """
        if not isinstance(changed, bool):
            raise InvalidArgument("changed must be true or false")
        if after is not None and (not isinstance(after, str) or not after):
            raise InvalidArgument("after must be a document path, the last of a previous page")
        prefix = _prefix(path_prefix)
        count = check_limit(limit, LIST_DEFAULT_LIMIT, LIST_MAX_LIMIT)
        label = "/".join(prefix)
        with self._scope_dir(scope, create=False) as scope_fd:
            base = None
            if scope_fd is not None:
                try:
                    base = fs.open_dirs(scope_fd, prefix, label)
                except fs.FileInTheWay:
                    base = None  # the prefix names a document, not a folder
            with fs.opened(base):
                if base is None:
                    return {"documents": [], "truncated": False}
                walk = fs.TreeWalk(base, label + "/" if prefix else "", SCAN_MAX_DIR_ENTRIES)
                listing = _listing(walk, count, None if after is None else after.encode())
        found = listing["documents"]
        if not changed:
            return listing
        newest = {} if self.history is None or not found else self.history.newest(
            scope, [document["path"] for document in found])
        for document in found:
            change = newest.get(document["path"])
            document["changed"] = None if change is None or \
                change["revision"] != document["revision"] else {
                    key: change[key] for key in (*CHANGED_FIELDS, "source") if key in change}
        return listing

    def doctor(self, scope: Scope) -> dict[str, Any]:
        """Read-only health report of the scope (`amux memory doctor`; `amux.memory.health`)."""
        with self._scope_dir(scope, create=False) as scope_fd:
            collected = documents.collect(scope_fd)
        report = health.diagnose(collected, scope.binding, self.wall_clock())
        if self.history is not None:  # old versions go first: headroom, never an error
            report["quota"].append({"quota": "history_bytes", "used": self.history.size(scope),
                                    "limit": self.history.max_bytes, "path": None})
        return report

    def exists(self, scope: Scope) -> bool:
        """Whether the scope's folder is under the root, one the store opens (its first
        write makes it)."""
        try:
            with self._scope_dir(scope, create=False) as scope_fd:
                return scope_fd is not None
        except InvalidPath:  # a symlink or a file where the folder would be
            return False

    def usage(self, scope: Scope) -> ScopeUsage:
        """Count the scope's documents and bytes now."""
        with self._scope_dir(scope, create=False) as scope_fd:
            return _count(scope_fd)

    # -- history (docs/store.md "History") ---------------------------------------------

    def log(self, scope: Scope, path: object = None, since: object = None,
            limit: object = None, before: object = None,
            session: object = None) -> dict[str, Any]:
        """The scope's changes, newest first (`amux memory log`): of `path`, from `since`
        on, older than the change `before` (a `commit` of an earlier answer: the next
        page), made by amux session `session`; `more` says older ones match too."""
        history = self._history()
        if path is not None and not isinstance(path, str):
            raise InvalidArgument("path must be a string")
        logical = None if path is None else validate_path(path)
        if since is not None and (isinstance(since, bool) or not isinstance(since, int | float)):
            raise InvalidArgument("since must be a time in seconds since the epoch")
        if before is not None and (not isinstance(before, str) or not _COMMIT.fullmatch(before)):
            raise InvalidArgument(f"before must be the commit (40 lowercase hex digits) of a "
                                  f"change from an earlier log, got {shown(before)}")
        wanted = check_label(session, "session")
        count = check_limit(limit, LOG_DEFAULT_LIMIT, LOG_MAX_LIMIT)
        changes = history.log(scope, None if logical is None else logical.text,
                              None if since is None else float(since), count + 1, before,
                              wanted)
        if changes is None:
            raise NotFound(f"the history of {scope.binding} has no change {before} (a purge "
                           "or retention gives later changes new commits): log again from "
                           "the newest")
        return {"changes": changes[:count], "more": len(changes) > count}

    def version(self, scope: Scope, path: str, revision: object,
                field: str = "revision") -> bytes:
        """The bytes `path` had at `revision` (the request's `field`), from history;
        `not_found` when it has none."""
        logical = validate_path(path)
        wanted = check_expected(revision, field)
        if wanted == ABSENT:
            raise InvalidArgument("a revision is a SHA-256 of a version, not absent")
        data = self._history().version(scope, logical.text, wanted)
        if data is None:
            raise NotFound(f"{logical.text} has no revision {wanted} in history; "
                           "`amux memory log PATH` lists its versions")
        return data

    def purge_history(self, scope: Scope, path: str, revision: object = None) -> dict[str, Any]:
        """Remove `path`'s version `revision` from history, or (None) all of its past but
        its current content (`amux memory purge`, the Hub's owner only)."""
        history = self._history()
        logical = validate_path(path)
        wanted = None if revision is None else check_expected(revision, "revision")
        if wanted == ABSENT:
            raise InvalidArgument("a revision is a SHA-256 of a version, not absent")
        with self._write_lock(scope), self._document_dir(scope, logical) as parent:
            found = _read(parent, logical)
            current = None if found is None else found[0]
            if wanted is not None and current is not None and revision_of(current) == wanted:
                raise InvalidArgument(
                    f"{logical.text} holds revision {wanted} now: change or forget the "
                    "document first (`amux memory upsert`/`forget`), then purge it from history")
            purged = history.purge(scope, logical.text, wanted, current)
        if wanted is not None and not purged:
            raise NotFound(f"{logical.text} has no revision {wanted} in history")
        return {"path": logical.text, "revision": wanted, "purged": purged}

    def catch_up_history(self) -> int:
        """Record as hand edits what changed in every scope while history did not watch
        (at the Hub's start), after the earlier versions a crash left kept; the number of
        changes recorded."""
        history = self._history()
        recorded = 0
        for scope in self._scopes():
            with self._write_lock(scope), self._scope_dir(scope, create=False) as scope_fd:
                documents = {}
                if scope_fd is not None:
                    for found in fs.TreeWalk(scope_fd):
                        read_back = found.read()
                        if read_back is not None:
                            documents[found.path] = read_back[0]
                recorded += history.catch_up(scope, documents)
        return recorded

    def _history(self) -> VersionStore:
        if self.history is None:
            raise InvalidArgument("this Hub keeps no memory history")
        return self.history

    def _scopes(self) -> builtins.list[Scope]:
        """Every scope with a directory under the root."""
        scopes = [GLOBAL]
        try:
            users = sorted(os.listdir(self.root / "users"))
        except (FileNotFoundError, NotADirectoryError):
            users = []
        scopes += [Scope(f"principal:{name}", ("users", name)) for name in users
                   if len(name) == 64 and all(c in "0123456789abcdef" for c in name)]
        return scopes

    # -- writes --------------------------------------------------------------------

    def upsert(
        self, scope: Scope, path: str, content: str | bytes, expected_revision: object,
        author: Author = NOBODY, operation: str | None = None, dry_run: bool = False,
    ) -> dict[str, Any]:
        """Create (`expected_revision="absent"`) or replace a whole document, durably;
        with history, recorded as `operation` (default: create or update) by `author`.
        `dry_run`: every check of the write (path, revision, quotas, the secret guard) and
        nothing written (what `amux memory import` asks before `--apply`)."""
        logical = validate_path(path)
        expected = check_expected(expected_revision)
        data = _utf8(content, logical)
        quota.check_document(logical, data)
        key = (scope.binding, logical.text)
        base = None if dry_run else self._recent.clean(key)
        findings = self._check_secrets(scope, data, base)
        if dry_run:
            return self._dry_upsert(scope, logical, expected, data)
        with self._write_lock(scope), self._scope_dir(scope, create=True) as scope_fd:
            assert scope_fd is not None
            with ExitStack() as stack:
                parent = _existing_parent(scope_fd, logical)
                if parent is not None:
                    stack.callback(os.close, parent)
                current = _read(parent, logical)
                old = current[0] if current is not None else None
                self._check_revision(scope, logical, expected, old)
                if base is not None and old != base:  # changed since we wrote it
                    findings = self._check_secrets(scope, data, None)
                usage = self._scope_usage(scope, scope_fd)
                quota.check_scope(usage, None if old is None else len(old), len(data))
                if parent is None:
                    parent = fs.open_dirs(scope_fd, logical.parents, logical.text, create=True)
                    assert parent is not None
                    stack.callback(os.close, parent)
                if self.history is not None and old is not None:
                    self.history.keep(scope, logical, parent, old, expected)
                durable.write_atomic_at(parent, logical.name, data)
            revision = revision_of(data)
            if self.history is not None:
                self.history.record(scope, Change(
                    operation or ("create" if old is None else "update"), logical.text, data,
                    author, self.wall_clock(), revision))
            self._recent.remember(key, data, revision, clean=not findings)
            usage.bytes += len(data) - (0 if old is None else len(old))
            usage.documents += old is None
        return {"path": logical.text, "revision": revision, "created": old is None}

    def _dry_upsert(self, scope: Scope, logical: LogicalPath, expected: str,
                    data: bytes) -> dict[str, Any]:
        """The checks of an upsert under the scope's lock, and no write (nor folder)."""
        with self._write_lock(scope), self._scope_dir(scope, create=False) as scope_fd:
            old = None
            usage = ScopeUsage(0, 0)
            if scope_fd is not None:
                with fs.opened(_existing_parent(scope_fd, logical)) as parent:
                    current = _read(parent, logical)
                    old = current[0] if current is not None else None
                usage = self._scope_usage(scope, scope_fd)
            self._check_revision(scope, logical, expected, old)
            quota.check_scope(usage, None if old is None else len(old), len(data))
        return {"path": logical.text, "revision": revision_of(data), "created": old is None,
                "dry_run": True}

    def forget(self, scope: Scope, path: str, expected_revision: object,
               author: Author = NOBODY) -> dict[str, Any]:
        """Delete one document if it is at `expected_revision`; a missing one is no error."""
        logical = validate_path(path)
        expected = check_expected(expected_revision)
        absent = {"path": logical.text, "already_absent": True}
        with self._write_lock(scope), self._scope_dir(scope, create=False) as scope_fd:
            if scope_fd is None:
                return absent
            parent = _existing_parent(scope_fd, logical)
            with fs.opened(parent):
                current = _read(parent, logical)
                if parent is None or current is None:
                    return absent
                self._check_revision(scope, logical, expected, current[0])
                if self.history is not None:
                    self.history.keep(scope, logical, parent, current[0], expected)
                durable.unlink_at(parent, logical.name)
                self._recent.remember((scope.binding, logical.text), None)
                if self.history is not None:
                    self.history.record(scope, Change("forget", logical.text, None, author,
                                                      self.wall_clock()))
            cached = self._usage.get(scope.binding)
            if cached is not None:
                cached[0].documents -= 1
                cached[0].bytes -= len(current[0])
        return {"path": logical.text, "deleted": True}

    # -- the secret guard's allow list (docs/store.md "Secret guard") ---------------

    def allowed_secrets(self, scope: Scope) -> dict[str, Any]:
        """The fingerprints the scope's allow list holds."""
        with self._scope_dir(scope, create=False) as scope_fd:
            found = _read_allow_list(scope_fd)
        fingerprints = sorted(secretguard.parse_allow_list(found or b""))
        return {"binding": scope.binding, "fingerprints": fingerprints}

    def allow_secret(self, scope: Scope, fingerprint: str, *, allow: bool = True) -> (
        dict[str, Any]
    ):
        """Add (or, `allow=False`, remove) one fingerprint in the scope's allow list."""
        fingerprint = _fingerprint(fingerprint)
        with self._write_lock(scope), self._scope_dir(scope, create=allow) as scope_fd:
            old = _read_allow_list(scope_fd)
            had = fingerprint in secretguard.parse_allow_list(old or b"")
            if scope_fd is not None and had != allow:
                new = secretguard.render_allow_list(
                    old, add=fingerprint if allow else None, remove=None if allow else fingerprint)
                durable.write_atomic_at(scope_fd, secretguard.ALLOW_LIST_NAME, new)
                old = new
        fingerprints = sorted(secretguard.parse_allow_list(old or b""))
        change = {"added": not had} if allow else {"removed": had}
        return {"binding": scope.binding, "fingerprint": fingerprint, **change,
                "fingerprints": fingerprints}

    def check_secrets(self, scope: Scope, data: bytes) -> None:
        """Refuse `data` as a write would (a sync checks what it pushes)."""
        self._check_secrets(scope, data, None)

    def _check_secrets(self, scope: Scope, data: bytes, base: bytes | None) -> bool:
        """Refuse content that looks like a credential, unless the scope allows the value;
        whether anything (allowed) was found.

        With `base`, bytes this store wrote and the guard found nothing in, only what
        `data` changes of them is scanned (`secretguard.scan_change`); the caller scans
        again in full, under the write lock, if the document on disk is no longer `base`
        (a hand edit, which may have brought a secret in). Otherwise it runs before the
        write lock (pure computation); the allow list is read only when something was
        found, so a clean write costs the scan alone.
        """
        findings = (secretguard.scan(data) if base is None
                    else secretguard.scan_change(base, data))
        if not findings:
            return False
        try:
            with self._scope_dir(scope, create=False) as scope_fd:
                found = _read_allow_list(scope_fd)
        except InvalidPath:
            found = None  # an allow list that is not a regular file allows nothing
        refused = secretguard.refused(findings, secretguard.parse_allow_list(found or b""))
        if refused:
            raise secretguard.refusal(refused)
        return True

    # -- helpers -------------------------------------------------------------------

    @contextmanager
    def _scope_dir(self, scope: Scope, *, create: bool) -> Iterator[int | None]:
        label = "/".join(scope.directory)
        with fs.opened(fs.open_dirs(self._root_fd, scope.directory, label, create=create)) as fd:
            yield fd

    @contextmanager
    def _document_dir(self, scope: Scope, logical: LogicalPath) -> Iterator[int | None]:
        """The document's directory for reading, or None when it cannot exist."""
        with self._scope_dir(scope, create=False) as scope_fd:
            if scope_fd is None:
                yield None
                return
            with fs.opened(_existing_parent(scope_fd, logical)) as parent:
                yield parent

    def _check_revision(
        self, scope: Scope, logical: LogicalPath, expected: str, current: bytes | None
    ) -> None:
        """Refuse the write unless the document is at `expected` (under the write lock)."""
        if current is None:
            actual = ABSENT
        else:
            actual = self._recent.revision((scope.binding, logical.text), current)
        if actual != expected:
            raise RevisionConflict(logical.text, expected, actual)

    def _write_lock(self, scope: Scope) -> threading.Lock:
        with self._guard:
            lock = self._write_locks.get(scope.binding)
            if lock is None:
                lock = self._write_locks[scope.binding] = threading.Lock()
            return lock

    def _scope_usage(self, scope: Scope, scope_fd: int) -> ScopeUsage:
        """The scope's usage, re-counted when older than `USAGE_TTL_SECONDS` (under lock)."""
        cached = self._usage.get(scope.binding)
        now = self.clock()
        if cached is not None and now - cached[1] < USAGE_TTL_SECONDS:
            return cached[0]
        usage = _count(scope_fd)
        self._usage[scope.binding] = (usage, now)
        return usage


def _tidy(root_fd: int) -> fs.Tidied:
    """Start-up: the root and everything below it private again, stale temps gone
    (`fs.tidy_tree`); on a read-only file system what cannot change is counted."""
    tidied = fs.tidy_tree(root_fd)
    fs.make_private(root_fd, fs.DIRECTORY_MODE, tidied)
    return tidied


def _listing(walk: fs.TreeWalk, count: int, after: bytes | None) -> dict[str, Any]:
    """Up to `count` documents of `walk` (the bytewise order of full paths), those past
    `after` only."""
    documents: list[dict[str, Any]] = []
    truncated = False
    for found in walk:
        if after is not None and found.path.encode() <= after:
            continue
        if len(documents) == count:
            truncated = True
            break
        found_data = found.read()
        if found_data is None:
            continue
        data, st = found_data
        documents.append({"path": found.path, "bytes": len(data), "revision": revision_of(data),
                          "modified_at": read.rfc3339(st.st_mtime)})
    return {"documents": documents, "truncated": truncated or walk.stopped_early}


def _count(scope_fd: int | None) -> ScopeUsage:
    usage = ScopeUsage(0, 0)
    if scope_fd is None:
        return usage
    for found in fs.TreeWalk(scope_fd):
        try:
            size = found.lstat().st_size
        except FileNotFoundError:
            continue
        usage.documents += 1
        usage.bytes += size
    return usage


def _prefix(path_prefix: object) -> tuple[str, ...]:
    """Segments of a `path_prefix` argument (None or "" = the whole scope)."""
    if path_prefix is not None and not isinstance(path_prefix, str):
        raise InvalidArgument("path_prefix must be a string")
    return validate_prefix(path_prefix)


def _existing_parent(scope_fd: int, logical: LogicalPath) -> int | None:
    """Open the document's directory; None when missing or a file stands in the way
    (then no such document can exist; a write reports the file when it creates)."""
    try:
        return fs.open_dirs(scope_fd, logical.parents, logical.text)
    except fs.FileInTheWay:
        return None


def _read(parent: int | None, logical: LogicalPath) -> tuple[bytes, os.stat_result] | None:
    """The document in directory fd `parent` (None: its directory does not exist)."""
    return None if parent is None else fs.read_at(parent, logical.name, logical.text)


def _utf8(content: str | bytes, logical: LogicalPath) -> bytes:
    if isinstance(content, str):
        try:
            return content.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise NotUtf8(
                f"content for {logical.text} has a lone surrogate at character {exc.start}"
            ) from None
    if isinstance(content, bytes):
        try:
            content.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise NotUtf8(
                f"content for {logical.text} is not valid UTF-8 at byte {exc.start}; "
                "memory documents are UTF-8 Markdown"
            ) from None
        return content
    raise InvalidArgument("content must be text")


def _read_allow_list(scope_fd: int | None) -> bytes | None:
    """The scope's allow-list file, or None (no scope directory, no file)."""
    if scope_fd is None:
        return None
    found = fs.read_at(scope_fd, secretguard.ALLOW_LIST_NAME, secretguard.ALLOW_LIST_NAME)
    return None if found is None else found[0]


def _fingerprint(value: object) -> str:
    try:
        return secretguard.check_fingerprint(value)
    except ValueError as exc:
        raise InvalidArgument(str(exc)) from None
