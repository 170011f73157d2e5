"""Memory history: every change of a scope's documents, who made it, and a way back.

One bare git repository per scope, outside the memory root (the Markdown tree stays
plain files; `git --git-dir=<AMUX_HOME>/history/global.git log -p` reads it):

    <AMUX_HOME>/history/global.git                 the global scope       (0700)
    <AMUX_HOME>/history/users/<sha256>.git         a principal's scope

Each change is one commit whose tree is the scope's documents as they stood after it
(`git show`, `git diff` and `git log -p PATH` work as on any repository), with the facts
people ask about in its message's trailers: the operation (create, update, forget,
restore, hand edit), the path, the revision (SHA-256, as everywhere in amux), the size,
and who (the principal; for a launched agent its name and amux session, recorded with
its delegated token). The author is the principal, or "hand edit" for a change made
outside the Hub.

Writes stay as fast as without history: the store acknowledges a write once the
document is durable, and one writer thread commits it behind (`record`). One rule makes
that safe (`keep`): before a document is replaced or removed, its current bytes are kept
until history has them, as a hard link beside the document (`KEEP_PREFIX`) that the
write's own directory fsync makes durable, or committed there and then where no link can
be made. So after a crash at any point, every version a client was told was saved is the
document's content, a kept link or in the history; `catch_up`, run for every scope when
the Hub starts, records the kept links and what changed on disk meanwhile (a hand edit
while the Hub was stopped, or the Hub's own last writes whose commits the crash cut off)
as hand edits.

`History` is the store's `versions.VersionStore`. Reads (`log`, `version`) never touch
the memory root, and search and get never read history.
"""

from __future__ import annotations

import collections
import contextlib
import errno
import functools
import itertools
import logging
import os
import threading
import time
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from pathlib import Path

import pygit2

from amux.errors import InvalidPath
from amux.memory import fs, gitpack, rootlock
from amux.memory.limits import SEGMENT_MAX_BYTES
from amux.memory.revision import ABSENT, revision_of
from amux.memory.scope import Scope
from amux.memory.versions import HAND_EDIT, NOBODY, Change
from amux.typing_light import NamedTuple

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from amux.memory.paths import LogicalPath
    from amux.memory.versions import VersionStore

log = logging.getLogger("amux.hub")

DEFAULT_MAX_BYTES = 256 * 1024 * 1024
DEFAULT_MAX_AGE_SECONDS = 365 * 86400.0
IDLE_SECONDS = 0.05
"""The writer commits once no write came for this long (or when someone waits for it):
a burst of writes is not slowed by commits made between them (docs/store.md)."""
BACKLOG_MAX = 256
"""Past this many changes waiting, the writer commits even while writes go on coming (so
what waits in memory stays bounded: at most 256 documents of at most 64 KiB)."""
KEEP_PREFIX = ".amux-keep-"
"""`.amux-keep-<revision>-<name>`: a document's earlier version, hard-linked beside it
until history has it (`History.keep` makes them, the writer removes them)."""
_KEPT_NAME_AT = len(KEEP_PREFIX) + 65
"""Where the document's name starts in a kept link's (after the revision and "-")."""
_NO_LINKS = frozenset({errno.EPERM, errno.EMLINK, errno.ENOTSUP, errno.EOPNOTSUPP,
                       errno.EXDEV})
"""A file system that makes no hard link here (`History.keep` then commits instead)."""
ENFORCE_EVERY = 256
"""Retention is checked for a scope at the Hub's start and after this many commits."""
PACKS_MAX = 16
"""A scope's history merges its smallest packs into one when it has more than this."""
BRANCH = "refs/heads/main"
TRAILER = "Amux-"

pygit2.option(pygit2.enums.Option.ENABLE_FSYNC_GITDIR, True)  # a ref moved is durable


_GIT_LOCKS = ("HEAD.lock", "refs/heads/main.lock", "packed-refs.lock", "config.lock")
"""The lock files libgit2 takes while it moves a ref; a killed writer leaves them behind,
and every later commit would fail on them."""


class Logged(NamedTuple):
    """One change as `log` shows it (its commit's trailers), held in memory per scope."""

    commit: str
    at: float
    path: str
    operation: str
    revision: str
    size: int
    principal: str | None
    agent: str | None
    session: str | None
    source: str | None = None

    @classmethod
    def of(cls, commit: pygit2.Commit) -> Logged:
        return cls.parse(str(commit.id), commit.message, commit.commit_time)

    @classmethod
    def parse(cls, commit: str, message: str, commit_time: int) -> Logged:
        facts = _facts(message)
        return cls(commit, float(facts.get("time", commit_time)),
                   facts.get("path", ""), facts.get("operation", ""),
                   facts.get("revision", ""), int(facts.get("size", "0")),
                   facts.get("principal"), facts.get("agent"), facts.get("session"),
                   facts.get("source"))

    def to_wire(self) -> dict[str, Any]:
        from amux.memory.read import rfc3339

        wire = {"at": rfc3339(self.at), "path": self.path, "operation": self.operation,
                "revision": self.revision, "bytes": self.size, "principal": self.principal,
                "agent": self.agent, "session": self.session, "commit": self.commit}
        if self.source is not None:  # only an imported change has one (docs/wire.md)
            wire["source"] = self.source
        return wire


class _Queued(NamedTuple):
    scope: Scope
    change: Change
    if_missing: bool = False
    """Commit only if history's newest version of the path is not these bytes."""
    release: Callable[[], None] | None = None
    """Run once the change is in history (its kept link removed)."""


class _Repo:
    """One scope's repository; every use holds `lock` (libgit2 objects are not shared
    between threads)."""

    def __init__(self, path: Path, lock: threading.RLock | None = None) -> None:
        self.lock = lock or threading.RLock()
        """The scope's, the same across the rebuilds that replace this object (`History`)."""
        self._logged: list[Logged] | None = None
        rebuilt = path.with_name(path.name + ".rebuilt")
        purged = path.with_name(path.name + ".purged")
        if purged.exists():  # a purge was cut off after setting the old one aside
            if not path.exists():
                os.rename(rebuilt, path)
            _remove_tree(purged)
        _remove_tree(rebuilt)  # else a purge cut off before: the old history stands
        if path.exists():
            for name in _GIT_LOCKS:  # stale: `History` holds the history's one writer lock
                (path / name).unlink(missing_ok=True)
            self.git = pygit2.Repository(str(path))
        else:
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            self.git = pygit2.init_repository(str(path), bare=True, initial_head="main")
            path.chmod(0o700)
        self._pack_dir = path / "objects" / "pack"
        self._packs_written = len(list(self._pack_dir.glob("pack-*.idx")))
        """Packs at open, then one more per `save`: merged when over `PACKS_MAX`."""
        self._dirs: dict[str, dict[str, tuple[bool, bytes]]] = {}
        """Folder → its tree's entries, as the newest commit has them (`_entries`)."""
        self._staged: dict[bytes, tuple[int, bytes]] = {}
        self._staged_log: list[Logged] = []
        self._staged_head: bytes | None = None

    def head(self) -> pygit2.Commit | None:
        if self.git.head_is_unborn:
            return None
        commit = self.git[self.git.head.target]
        assert isinstance(commit, pygit2.Commit)
        return commit

    def blob_id(self, path: str) -> bytes | None:
        """The raw id of `path`'s blob in the newest commit, staged ones included; None
        when absent."""
        *parents, name = path.split("/")
        entries = self._entries("")
        for depth in range(len(parents)):
            entry = entries.get(parents[depth])
            if entry is None or not entry[0]:
                return None
            entries = self._entries("/".join(parents[:depth + 1]))
        entry = entries.get(name)
        return None if entry is None or entry[0] else entry[1]

    def logged(self) -> list[Logged]:
        """Every change, newest first: read from the commits once (10,000 changes: ~150 ms),
        then updated by `save`, so `log` costs what it returns."""
        if self._logged is None:
            head = self.head()
            self._logged = [] if head is None else [
                Logged.of(commit)  # parent order as it goes, no sort of the whole history
                for commit in self.git.walk(head.id, pygit2.enums.SortMode.NONE)
                if len(commit.parent_ids) < 2]  # a sync's merge (amux.hub.sync) changes none
        return self._logged

    def versions(self) -> set[tuple[str, str]]:
        """(path, revision) of every version history holds."""
        return {(change.path, change.revision) for change in self.logged()}

    def paths(self) -> dict[str, bytes]:
        """Every document of the newest commit and its blob's raw id."""
        head = self.head()
        if head is None:
            return {}
        index = pygit2.Index()
        index.read_tree(head.tree)
        return {entry.path: entry.id.raw for entry in index}

    # -- a batch of commits, staged in memory, then one pack (`gitpack`) ---------------

    def stage(self, change: Change) -> None:
        """`change` as a commit on the newest one, held in memory until `save`; none when
        it removes what history has gone already."""
        name = change.author.principal or HAND_EDIT
        who = gitpack.signature(name, f"{name.replace(' ', '-')}@amux", int(change.at), 0)
        message = _message(change)
        made = self._append(change.path, change.data, who, who, message, only_a_change=True)
        if made is not None:
            self._staged_log.append(Logged.parse(made.hex(), message, int(change.at)))

    def replay(self, commit: pygit2.Commit, data: bytes | None) -> None:
        """`commit`'s change made again on top of this repository (`History._rebuild`),
        staged until `save`."""
        def who(person: pygit2.Signature) -> bytes:
            return gitpack.signature(person.name, person.email, person.time, person.offset)

        self._append(_facts(commit.message).get("path", ""), data, who(commit.author),
                     who(commit.committer), commit.message, only_a_change=False)

    def save(self) -> None:
        """Write what is staged as one durable pack and move the branch to its newest
        commit; on a failure nothing staged remains (the caller says what failed)."""
        if self._staged_head is None:
            return
        try:
            gitpack.write(self._pack_dir, self._staged)
            self.git.references.create(BRANCH, pygit2.Oid(raw=self._staged_head), force=True)
        except BaseException:
            self.discard()
            raise
        if self._logged is not None:
            self._logged[:0] = reversed(self._staged_log)
        self._unstage()
        self._packs_written += 1
        if self._packs_written > PACKS_MAX:
            self._merge_packs()

    def forget_log(self) -> None:
        """Read the log from the commits again (a sync moved the branch)."""
        self._logged = None

    def discard(self) -> None:
        """Forget what is staged (the trees held in memory are read again as needed)."""
        self._unstage()
        self._dirs.clear()

    def _unstage(self) -> None:
        self._staged.clear()
        self._staged_log.clear()
        self._staged_head = None

    def _append(self, path: str, data: bytes | None, author: bytes, committer: bytes,
                message: str, only_a_change: bool) -> bytes | None:
        """Stage a commit on the newest one whose tree has `path` set to `data` (None:
        removed); with `only_a_change`, none when that removes what is already gone."""
        *parents, name = path.split("/")
        folders = ["/".join(parents[:depth]) for depth in range(len(parents) + 1)]
        entries = [self._entries(folder) for folder in folders]
        if data is None:
            if entries[-1].pop(name, None) is None and only_a_change:
                return None
        else:
            entries[-1][name] = (False, self._object(gitpack.BLOB, data))
        for depth in range(len(parents), 0, -1):  # each folder's tree, deepest first
            if entries[depth]:
                entries[depth - 1][parents[depth - 1]] = (
                    True, self._object(gitpack.TREE, gitpack.tree(entries[depth])))
            else:
                entries[depth - 1].pop(parents[depth - 1], None)  # git has no empty tree
        root = self._object(gitpack.TREE, gitpack.tree(entries[0]))
        parent = self._staged_head
        if parent is None:
            head = self.head()
            parent = None if head is None else head.id.raw
        made = self._object(gitpack.COMMIT, gitpack.commit(root, parent, author, committer,
                                                           message))
        self._staged_head = made
        return made

    def _object(self, kind: int, data: bytes) -> bytes:
        raw = gitpack.object_id(kind, data)
        self._staged[raw] = (kind, data)
        return raw

    def _entries(self, folder: str) -> dict[str, tuple[bool, bytes]]:
        """The entries of `folder`'s tree as the newest commit (staged ones included) has
        it, name → (is a tree, raw id); read from the repository the first time."""
        entries = self._dirs.get(folder)
        if entries is None:
            raw: bytes | None = None
            if not folder:
                head = self.head()
                raw = None if head is None else head.tree.id.raw
            else:
                parent, _, name = folder.rpartition("/")
                entry = self._entries(parent).get(name)
                raw = entry[1] if entry is not None and entry[0] else None
            entries = {}
            if raw is not None:
                found = self.git[pygit2.Oid(raw=raw)]
                assert isinstance(found, pygit2.Tree)
                entries = {item.name or "": (item.type == pygit2.enums.ObjectType.TREE,
                                             item.id.raw) for item in found}
            self._dirs[folder] = entries
        return entries

    def _merge_packs(self) -> None:
        """Merge the smallest packs into one (libgit2's pack builder, with deltas) while
        there are more than `PACKS_MAX`: each object is merged again only when its pack
        grew as large as others, so merging costs little per change."""
        packs = sorted(self._pack_dir.glob("pack-*.idx"),
                       key=lambda index: index.with_suffix(".pack").stat().st_size)
        self._packs_written = len(packs)
        if len(packs) <= PACKS_MAX:
            return
        merged = packs[:PACKS_MAX]
        builder = pygit2.PackBuilder(self.git)
        for index in merged:
            for raw in gitpack.ids_in(index):
                builder.add(pygit2.Oid(raw=raw))
        builder.write(str(self._pack_dir))  # durable: libgit2's fsync is on
        for index in merged:  # the index first: no reader finds a pack without objects
            index.unlink()
            index.with_suffix(".pack").unlink(missing_ok=True)
            index.with_suffix(".rev").unlink(missing_ok=True)
        self.git = pygit2.Repository(self.git.path)  # libgit2 forgets the removed packs
        self._packs_written = len(packs) - len(merged) + 1

    def changes(self) -> Iterator[tuple[pygit2.Commit, bytes | None]]:
        """Every commit, oldest first, with the bytes its change left at its path."""
        head = self.head()
        if head is None:
            return
        walk = self.git.walk(head.id, pygit2.enums.SortMode.TOPOLOGICAL
                             | pygit2.enums.SortMode.REVERSE)
        for commit in walk:
            path = _facts(commit.message).get("path", "")
            try:
                blob = commit.tree[path]
            except KeyError:
                yield commit, None
                continue
            assert isinstance(blob, pygit2.Blob)
            yield commit, blob.data


def _left_by_purge(changes: Sequence[Logged], path: str, revision: str | None,
                   current: str | None) -> set[int]:
    """Indexes (oldest first) of the changes a purge leaves: all but `path`'s version
    `revision`, or (None) all but its versions other than `current` (a revision)."""
    def purged(change: Logged) -> bool:
        if change.path != path or change.revision == ABSENT:
            return False
        return change.revision == revision if revision is not None else \
            change.revision != current

    return {index for index, change in enumerate(changes) if not purged(change)}


def _never_dropped(changes: Sequence[Logged]) -> set[int]:
    """Indexes (oldest first) of the changes retention never drops: each document's
    newest, and for a forgotten one also the last version it had."""
    newest: set[int] = set()
    seen: set[str] = set()
    gone: set[str] = set()
    for index in range(len(changes) - 1, -1, -1):
        change = changes[index]
        if change.path not in seen:
            seen.add(change.path)
            newest.add(index)
            if change.revision == ABSENT:
                gone.add(change.path)
        elif change.path in gone and change.revision != ABSENT:
            gone.discard(change.path)
            newest.add(index)
    return newest


def _left_by_age(changes: Sequence[Logged], cutoff: float) -> set[int]:
    """Indexes (oldest first) of the changes left once those before `cutoff` are dropped
    (never `_never_dropped`'s)."""
    never = _never_dropped(changes)
    return {index for index, change in enumerate(changes)
            if index in never or change.at >= cutoff}


def _left_by_size(changes: Sequence[Logged], share: float) -> set[int]:
    """Indexes (oldest first) of the changes left once the oldest `share` of those
    retention may drop (at least one) are dropped."""
    never = _never_dropped(changes)
    droppable = [index for index in range(len(changes)) if index not in never]
    dropped = set(droppable[:max(1, round(len(droppable) * share))])
    return set(range(len(changes))) - dropped


def _size(path: Path) -> int:
    total = 0
    for here, _, names in os.walk(path):
        for name in names:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(here, name)).st_size
    return total


def _remove_tree(path: Path) -> None:
    import shutil

    shutil.rmtree(path, ignore_errors=True)


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _message(change: Change) -> str:
    facts = {"Operation": change.operation, "Path": change.path,
             "Revision": "absent" if change.data is None else (
                 change.revision or revision_of(change.data)),
             "Size": "0" if change.data is None else str(len(change.data)),
             "Time": f"{change.at:.3f}", "Principal": change.author.principal,
             "Agent": change.author.agent, "Session": change.author.session,
             "Source": change.author.source}
    trailers = "".join(f"{TRAILER}{key}: {value}\n" for key, value in facts.items()
                       if value is not None)
    return f"{change.operation} {change.path}\n\n{trailers}"


def _facts(message: str) -> dict[str, str]:
    facts = {}
    for line in message.splitlines():
        key, colon, value = line.partition(": ")
        if colon and key.startswith(TRAILER):
            facts[key.removeprefix(TRAILER).lower()] = value
    return facts


class History:
    """The histories of every scope under `root`, with the one writer thread; one process
    at a time (an exclusive lock on `root`, as the store's on the memory root)."""

    def __init__(self, root: Path, clock: Callable[[], float] = time.time,
                 max_bytes: int = DEFAULT_MAX_BYTES,
                 max_age_seconds: float = DEFAULT_MAX_AGE_SECONDS) -> None:
        self.root = root
        self.clock = clock
        self.max_bytes = max_bytes
        self.max_age_seconds = max_age_seconds
        """0: no version is dropped for its age."""
        self._memory_fd = -1
        """The memory root (`attach`): where `keep` links and `catch_up` finds kept links."""
        self._since_enforced: collections.Counter[tuple[str, ...]] = collections.Counter()
        root.mkdir(mode=0o700, parents=True, exist_ok=True)
        self._root_fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            self._lock_fd = rootlock.lock_exclusive(self._root_fd, str(root))
        finally:
            os.close(self._root_fd)
        self._repos: dict[tuple[str, ...], _Repo] = {}
        self._guard = threading.Lock()
        self._queue: collections.deque[_Queued] = collections.deque()
        self._urgent = 0  # callers waiting for the writer: it does not wait to be idle
        self._last_record = time.monotonic()
        self._pending: collections.Counter[tuple[tuple[str, ...], str]] = collections.Counter()
        self._saved: dict[tuple[tuple[str, ...], str], str] = {}
        """(scope, path) → the revision history holds as its newest, durably (`holds`)."""
        self._changed = threading.Condition()
        self._closed = False
        self._writer = threading.Thread(target=self._write_behind, name="amux-history",
                                        daemon=True)
        self._writer.start()

    def repository(self, scope: Scope) -> _Repo:
        with self._guard:
            repo = self._repos.get(scope.directory)
            if repo is None:
                *parents, last = scope.directory
                path = self.root.joinpath(*parents, f"{last}.git")
                repo = self._repos[scope.directory] = _Repo(path)
            return repo

    def set_limits(self, max_bytes: int, max_age_seconds: float) -> None:
        """Retention's limits (`enforce`), from the Hub's configuration."""
        self.max_bytes = max_bytes
        self.max_age_seconds = max_age_seconds

    def attach(self, memory_root: int) -> None:
        """The memory root whose documents these are (an open directory, duplicated)."""
        memory_fd = os.dup(memory_root)
        if self._memory_fd >= 0:
            os.close(self._memory_fd)
        self._memory_fd = memory_fd

    # -- writing ----------------------------------------------------------------------

    def record(self, scope: Scope, change: Change) -> None:
        """Commit `change` behind the write that made it (the writer thread)."""
        self._enqueue(_Queued(scope, change))

    def keep(self, scope: Scope, logical: LogicalPath, directory: int, current: bytes,
             revision: str) -> None:
        """Before the document is replaced or removed: unless history holds `current` (at
        `revision`) already, a hard link to it beside the document in `directory` until
        the writer has committed it (durable by the write's own directory fsync); for a
        name too long to make one, or no hard links there, committed now."""
        if self._holds(scope, logical.text, revision):
            return
        link = f"{KEEP_PREFIX}{revision}-{logical.name}"
        if len(os.fsencode(link)) <= SEGMENT_MAX_BYTES:  # else no such name can exist
            try:
                os.link(logical.name, link, src_dir_fd=directory, dst_dir_fd=directory,
                        follow_symlinks=False)
            except FileExistsError:
                pass  # this very version, kept already
            except OSError as error:
                if error.errno not in _NO_LINKS:
                    raise  # a full or read-only disk: the write itself would fail too
                link = ""
            if link:
                change = Change(HAND_EDIT, logical.text, current, NOBODY, self.clock(),
                                revision)
                self._enqueue(_Queued(scope, change, if_missing=True, release=functools.partial(
                    self._remove_kept, scope, logical.parents, link)))
                return
        self._commit_now(scope, logical.text, current)

    def _holds(self, scope: Scope, path: str, revision: str) -> bool:
        """Whether history durably holds `revision` as `path`'s newest version, with no
        change of it waiting: a write replacing it need not keep it."""
        key = scope.directory, path
        with self._changed:
            return not self._pending[key] and self._saved.get(key) == revision

    def _remove_kept(self, scope: Scope, folder: tuple[str, ...], link: str) -> None:
        """History has the version kept as `link` in the scope's `folder`: the link goes."""
        if self._memory_fd < 0:
            return
        try:
            directory = fs.open_dirs(self._memory_fd, (*scope.directory, *folder), link)
        except InvalidPath:  # a file or a symlink stands where the folder was
            return
        with fs.opened(directory):
            if directory is not None:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(link, dir_fd=directory)

    def _kept_links(self, scope: Scope) -> list[tuple[tuple[str, ...], str, bytes]]:
        """The versions `keep` held that a crash left in the scope: (folder, link, bytes),
        never following a symlink."""
        if self._memory_fd < 0:
            return []
        try:
            scope_fd = fs.open_dirs(self._memory_fd, scope.directory, scope.binding)
        except (OSError, InvalidPath):
            return []
        found = []
        with fs.opened(scope_fd):
            if scope_fd is None:
                return []
            for here, _, names, here_fd in os.fwalk(".", dir_fd=scope_fd):
                folder = tuple(part for part in here.split("/") if part != ".")
                for name in names:
                    if not name.startswith(KEEP_PREFIX) or len(name) <= _KEPT_NAME_AT:
                        continue
                    try:
                        read_back = fs.read_at(here_fd, name, name)
                    except (OSError, InvalidPath):
                        continue
                    if read_back is not None:
                        found.append((folder, name, read_back[0]))
        return found

    def _commit_now(self, scope: Scope, path: str, current: bytes) -> None:
        """`current`, what `path` holds before a write replaces it, committed now unless
        it is history's newest version of `path` already."""
        self._wait_for(lambda: not self._pending[scope.directory, path])
        repo = self.repository(scope)
        with repo.lock:
            if repo.blob_id(path) != gitpack.object_id(gitpack.BLOB, current):
                repo.stage(Change(HAND_EDIT, path, current, NOBODY, self.clock()))
                try:
                    repo.save()
                except pygit2.GitError as error:  # a storage fault, said as one
                    raise OSError(errno.EIO, f"memory history: {error}") from None

    def _enqueue(self, item: _Queued) -> None:
        with self._changed:
            self._queue.append(item)
            self._pending[item.scope.directory, item.change.path] += 1
            self._last_record = time.monotonic()
            # A writer with changes waiting already sleeps until the writes pause: waking
            # it on every write would only cost each write a thread switch.
            if len(self._queue) == 1 or len(self._queue) >= BACKLOG_MAX:
                self._changed.notify_all()

    def catch_up(self, scope: Scope, documents: Mapping[str, bytes]) -> int:
        """Record as hand edits how the scope's `documents` (path → bytes, all of them)
        differ from its history, after the versions `keep` held that a crash left (then
        their links go); the number recorded. The caller holds the scope's write lock,
        so nothing changes the documents meanwhile."""
        self._wait_for(lambda: not any(key[0] == scope.directory for key in self._pending))
        links = self._kept_links(scope)
        repo = self.repository(scope)
        now = self.clock()
        recorded = 0
        with repo.lock:
            versions = repo.versions() if links else set()
            for folder, link, data in links:
                path = "/".join((*folder, link[_KEPT_NAME_AT:]))
                if (path, revision_of(data)) not in versions:
                    repo.stage(Change(HAND_EDIT, path, data, NOBODY, now))
                    versions.add((path, revision_of(data)))
                    recorded += 1
            known = repo.paths()
            for path, data in sorted(documents.items()):
                if repo.blob_id(path) != gitpack.object_id(gitpack.BLOB, data):
                    repo.stage(Change(HAND_EDIT, path, data, NOBODY, now))
                    recorded += 1
            for path in sorted(known.keys() - documents.keys()):
                repo.stage(Change(HAND_EDIT, path, None, NOBODY, now))
                recorded += 1
            repo.save()  # one pack, however many: a restart after a crash is not slowed
        for folder, link, _ in links:
            self._remove_kept(scope, folder, link)
        self.enforce(scope)
        return recorded

    def flush(self) -> None:
        """Until everything recorded so far is committed."""
        self._wait_for(lambda: not self._queue)

    def close(self) -> None:
        """Commit what is queued, then stop the writer."""
        self.flush()
        with self._changed:
            self._closed = True
            self._changed.notify_all()
        self._writer.join()
        for fd in (self._lock_fd, self._memory_fd):
            if fd >= 0:
                os.close(fd)
        self._lock_fd = self._memory_fd = -1

    def _wait_for(self, done: Callable[[], bool]) -> None:
        with self._changed:
            self._urgent += 1
            self._changed.notify_all()
            try:
                while not done():
                    self._changed.wait()
            finally:
                self._urgent -= 1

    def _write_behind(self) -> None:
        while True:
            with self._changed:
                while True:
                    if not self._queue:
                        if self._closed:
                            return
                        self._changed.wait()
                        continue
                    quiet = time.monotonic() - self._last_record
                    if (self._urgent or self._closed or quiet >= IDLE_SECONDS
                            or len(self._queue) >= BACKLOG_MAX):
                        break
                    self._changed.wait(IDLE_SECONDS - quiet)
                batch = list(self._queue)
            committed = self._commit(batch)
            for item in committed:  # in history, durably
                if item.release is not None:
                    with contextlib.suppress(OSError):
                        item.release()
            with self._changed:
                for item in batch:
                    self._queue.popleft()
                    key = item.scope.directory, item.change.path
                    self._pending[key] -= 1
                    if not self._pending[key]:
                        del self._pending[key]
                self._changed.notify_all()

    def _commit(self, batch: list[_Queued]) -> list[_Queued]:
        """Commit a batch of queued changes, one pack per scope; those history has now."""
        scopes: dict[tuple[str, ...], list[_Queued]] = {}
        for item in batch:
            scopes.setdefault(item.scope.directory, []).append(item)
        done: list[_Queued] = []
        for items in scopes.values():
            scope = items[0].scope
            repo = self.repository(scope)
            try:
                with repo.lock:
                    staged = 0
                    for item in items:
                        if not item.if_missing or repo.blob_id(item.change.path) != \
                                gitpack.object_id(gitpack.BLOB, item.change.data or b""):
                            repo.stage(item.change)
                            staged += 1
                        time.sleep(0)  # the GIL to the Hub's loop between changes
                    repo.save()
            except (OSError, pygit2.GitError):  # full disk: a kept version stays kept
                log.exception("memory history: could not commit %d change(s) in %s",
                              len(items), scope.binding)
                continue
            done += items
            with self._changed:
                for item in items:
                    change = item.change
                    self._saved[scope.directory, change.path] = ABSENT if change.data is None \
                        else change.revision or revision_of(change.data)
            self._since_enforced[scope.directory] += staged
            if self._since_enforced[scope.directory] >= ENFORCE_EVERY:
                self._since_enforced[scope.directory] = 0
                self.enforce(scope)
        return done

    def purge(self, scope: Scope, path: str, revision: str | None,
              current: bytes | None) -> int:
        """Remove from the scope's history `path`'s version `revision`, or (None) every
        version of it but its `current` bytes; the number of changes removed (`_rebuild`:
        no object of theirs is left, packed or loose). The caller holds the scope's write
        lock."""
        self._wait_for(lambda: not any(key[0] == scope.directory for key in self._pending))
        current_revision = None if current is None else revision_of(current)
        repo = self.repository(scope)
        with self._changed:
            self._saved = {key: value for key, value in self._saved.items()
                           if key[0] != scope.directory}
        with repo.lock:
            return self._rebuild(scope, repo, functools.partial(
                _left_by_purge, path=path, revision=revision, current=current_revision))

    def enforce(self, scope: Scope) -> int:
        """Retention: drop versions older than `max_age_seconds`, then the oldest while
        the history is over `max_bytes` (to 3/4 of it), never the newest version of any
        document (nor the last one a forgotten document had); the number dropped."""
        repo = self.repository(scope)
        dropped = 0
        with repo.lock:
            cutoff = self.clock() - self.max_age_seconds if self.max_age_seconds else None
            if cutoff is not None:
                dropped += self._rebuild(scope, repo, functools.partial(_left_by_age,
                                                                        cutoff=cutoff))
                repo = self.repository(scope)
            for _ in range(4):  # each round drops a larger share until it fits
                size = _size(Path(repo.git.path))
                if size <= self.max_bytes:
                    break
                share = 1 - (self.max_bytes * 3 / 4) / size
                dropped += self._rebuild(scope, repo, functools.partial(_left_by_size,
                                                                        share=share))
                repo = self.repository(scope)
        return dropped

    def size(self, scope: Scope) -> int:
        """Bytes the scope's history takes on disk."""
        return _size(Path(self.repository(scope).git.path))

    def _rebuild(self, scope: Scope, repo: _Repo,
                 left: Callable[[list[Logged]], set[int]]) -> int:
        """Make the history again from the changes `left` returns (indexes into them,
        oldest first), in a new repository that replaces the old one (so nothing of the
        others stays, packed or loose); the number of changes left out. Decided on the log
        held in memory: the commits are read only when something goes. Finished or undone
        at the next open if cut off (`_Repo`)."""
        changes = repo.logged()[::-1]
        left_indexes = left(changes)
        if len(left_indexes) == len(changes):
            return 0
        left_commits = {changes[index].commit for index in left_indexes}
        where = Path(repo.git.path)
        rebuilt = where.with_name(where.name + ".rebuilt")
        _remove_tree(rebuilt)
        fresh = _Repo(rebuilt)
        replayed = 0
        for commit, data in repo.changes():
            if str(commit.id) in left_commits:
                fresh.replay(commit, data)
                replayed += 1
                if replayed % BACKLOG_MAX == 0:  # a pack per so many: memory stays bounded
                    fresh.save()
        fresh.save()
        aside = where.with_name(where.name + ".purged")
        os.rename(where, aside)
        os.rename(rebuilt, where)
        _fsync_dir(where.parent)
        _remove_tree(aside)
        with self._guard:
            self._repos[scope.directory] = _Repo(where, repo.lock)
        return len(changes) - len(left_indexes)

    # -- reading ----------------------------------------------------------------------

    def log(self, scope: Scope, path: str | None, since: float | None, limit: int,
            before: str | None, session: str | None) -> list[dict[str, Any]] | None:
        """At most `limit` of the scope's changes, newest first: of `path` only, from
        `since` on, older than the change whose commit is `before`, made by `session`;
        None when no change's commit is `before`. One pass over the list held in memory."""
        self.flush()
        repo = self.repository(scope)
        entries = []
        with repo.lock:
            changes = repo.logged()
            start = 0
            if before is not None:
                start = next((index + 1 for index, change in enumerate(changes)
                              if change.commit == before), -1)
                if start < 0:
                    return None
            for change in itertools.islice(changes, start, None):
                if since is not None and change.at < since:
                    break
                if (path is None or change.path == path) and (
                        session is None or change.session == session):
                    entries.append(change.to_wire())
                    if len(entries) == limit:
                        break
        return entries

    def newest(self, scope: Scope, paths: Collection[str]) -> dict[str, dict[str, Any]]:
        """The newest change of each of `paths` that history has one of, as `log` shows
        it: one pass over the list held in memory, stopped once every path is found."""
        self.flush()
        wanted = set(paths)
        found = {}
        repo = self.repository(scope)
        with repo.lock:
            for change in repo.logged():
                if not wanted:
                    break
                if change.path in wanted:
                    wanted.remove(change.path)
                    found[change.path] = change.to_wire()
        return found

    def version(self, scope: Scope, path: str, revision: str) -> bytes | None:
        """The bytes `path` had at `revision`; None when history has no such version."""
        self.flush()
        repo = self.repository(scope)
        with repo.lock:
            for change in repo.logged():
                if change.path == path and change.revision == revision:
                    commit = repo.git[change.commit]
                    assert isinstance(commit, pygit2.Commit)
                    blob = commit.tree[path]
                    assert isinstance(blob, pygit2.Blob)
                    return blob.data
        return None


if TYPE_CHECKING:
    _: type[VersionStore] = History  # mypy proves that History is one
