"""Race-aware file primitives: directory file descriptors, `O_NOFOLLOW`, temp-and-replace.

Every path below the memory root is resolved one segment at a time with `openat`
and `O_NOFOLLOW`, so a symlink anywhere on the way is refused at the moment of use
rather than by a check-then-open that an attacker could race. Durable writes
go through `amux.durable`.
"""

from __future__ import annotations

import errno
import os
import stat
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from amux.durable import TEMP_PREFIX
from amux.errors import InvalidPath
from amux.memory.paths import segment_problem

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


class FileInTheWay(InvalidPath):
    """A path segment that must be a directory is a file (not a symlink)."""


def _refusal(dir_fd: int, name: str, label: str) -> InvalidPath:
    """Why `name` in `dir_fd` cannot be used as a directory."""
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return InvalidPath(label, "a parent directory vanished while it was being opened")
    if stat.S_ISLNK(st.st_mode):
        return InvalidPath(label, f"'{name}' is a symlink; symlinks are refused")
    return FileInTheWay(label, f"'{name}' is a file where a directory is needed")


def open_dir_at(dir_fd: int, name: str, label: str, *, create: bool = False) -> int | None:
    """Open subdirectory `name` of `dir_fd` without following symlinks.

    Returns None when it does not exist and `create` is false. A created directory
    is 0700 and its parent is fsynced, so the new entry is durable before use.
    """
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    except FileNotFoundError:
        if not create:
            return None
    except NotADirectoryError:
        raise _refusal(dir_fd, name, label) from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise InvalidPath(label, f"'{name}' is a symlink; symlinks are refused") from None
        raise
    try:
        os.mkdir(name, 0o700, dir_fd=dir_fd)
        os.fsync(dir_fd)
    except FileExistsError:
        pass  # created concurrently: open it below, refusing it if it is a symlink
    return open_dir_at(dir_fd, name, label, create=False)


def open_dirs(base_fd: int, segments: tuple[str, ...], label: str, *, create: bool = False) -> (
    int | None
):
    """Open the directory `segments` below `base_fd` (a new fd the caller closes)."""
    fd = os.dup(base_fd)
    for segment in segments:
        try:
            child = open_dir_at(fd, segment, label, create=create)
        finally:
            os.close(fd)
        if child is None:
            return None
        fd = child
    return fd


def read_at(dir_fd: int, name: str, label: str) -> tuple[bytes, os.stat_result] | None:
    """Bytes and stat of regular file `name` in `dir_fd`, or None when it is absent."""
    try:
        fd = os.open(name, _READ_FLAGS, dir_fd=dir_fd)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise InvalidPath(label, f"'{name}' is a symlink; symlinks are refused") from None
        if exc.errno == errno.ENXIO:
            raise InvalidPath(label, f"'{name}' is not a regular file") from None
        raise
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise InvalidPath(label, f"'{name}' is a directory")
        if not stat.S_ISREG(st.st_mode):
            raise InvalidPath(label, f"'{name}' is not a regular file")
        # Ask for one byte more than the size: a short read then proves end of file
        # without a second read call (this runs for every file a cold search scans).
        data = os.read(fd, st.st_size + 1)
        if len(data) > st.st_size:  # it grew while we read (edited by hand): read it all
            chunks = [data]
            while chunk := os.read(fd, 65536):
                chunks.append(chunk)
            data = b"".join(chunks)
        return data, st
    finally:
        os.close(fd)


def is_document_name(name: str) -> bool:
    """Whether a directory entry name can be a document's last segment."""
    return name.endswith(".md") and segment_problem(name) is None


SETTLE_NS = 1_000_000_000
"""A file or directory changed less than this long ago may change again within the
same timestamp tick (coarse clocks, 1-2 s on some file systems), so a cache must not
trust its stat key yet: the same "racily clean" rule git applies to its index."""


def settled(st: os.stat_result, now_ns: int) -> bool:
    """Whether `st`'s timestamps are old enough for its stat key to prove it unchanged."""
    return now_ns - max(st.st_mtime_ns, st.st_ctime_ns) > SETTLE_NS


@dataclass(slots=True)
class Found:
    """A document found by `TreeWalk`: its logical path and where to open it."""

    path: str
    dir_fd: int
    name: str

    def lstat(self) -> os.stat_result:
        return os.stat(self.name, dir_fd=self.dir_fd, follow_symlinks=False)

    def read(self) -> tuple[bytes, os.stat_result] | None:
        return read_listed(self.dir_fd, self.name, self.path)


def read_listed(dir_fd: int, name: str, label: str) -> tuple[bytes, os.stat_result] | None:
    """`read_at` for an entry a walk listed: None also if since the listing it became a
    symlink or a directory (never followed; the walk skips it)."""
    try:
        return read_at(dir_fd, name, label)
    except InvalidPath:
        return None


Listing = tuple[int, list[tuple[str, bool]]]
"""A directory's entry count (all entries, for the budget) and its (name, is_dir)
subdirectories and documents in walk order."""
ListingCache = dict[str, tuple[tuple[int, int, int], Listing]]
"""Listings by directory prefix, each with the directory's (inode, mtime, ctime)."""


def list_directory(dir_fd: int) -> Listing:
    """Subdirectories and `*.md` documents of `dir_fd` in bytewise walk order.

    Names are sorted with `/` appended to directory names: that makes depth-first
    order equal the bytewise order of full paths. Symlinks, dot-files, other files
    and names that are not valid segments are left out.
    """
    with os.scandir(dir_fd) as listing:
        entries = list(listing)
    keyed = []
    for entry in entries:
        name = entry.name
        if segment_problem(name) is not None:
            continue
        if entry.is_dir(follow_symlinks=False):
            keyed.append((os.fsencode(name) + b"/", name, True))
        elif name.endswith(".md") and entry.is_file(follow_symlinks=False):
            keyed.append((os.fsencode(name), name, False))
    keyed.sort()
    return len(entries), [(name, is_dir) for _key, name, is_dir in keyed]


MAX_OPEN_DIRS = 8
"""Directory fds one walk holds at once, however deep the tree.

A legal path may be ~500 directories deep (1,024 bytes); holding one fd per level in
each of the Hub's workers ran a Hub under `ulimit -n 1024` out of descriptors, and
then other scopes' plain reads failed too. Deeper levels close their ancestors and
reopen them (checked to be the same directory) on the way back up.
"""


class _Level:
    """One directory on a walk's stack; `fd` is None while closed to respect the bound."""

    __slots__ = ("fd", "ident", "pending", "prefix", "segments")

    def __init__(self, fd: int, prefix: str, segments: tuple[str, ...],
                 pending: Iterator[tuple[str, bool]]) -> None:
        self.fd: int | None = fd
        self.prefix = prefix
        self.segments = segments
        self.pending = pending
        self.ident: tuple[int, int] | None = None  # (st_dev, st_ino), recorded when closed


class TreeWalk:
    """Documents below a directory fd in bytewise path order, never following symlinks.

    With `max_entries` set, the walk stops after that many directory entries and
    sets `stopped_early`. With `listings`, a directory whose (inode, mtime, ctime)
    is unchanged and settled reuses its previous listing instead of re-reading it.
    Each yielded `Found.dir_fd` stays open until the walk moves past that directory;
    the walk holds at most `MAX_OPEN_DIRS` descriptors of its own.
    """

    def __init__(
        self,
        base_fd: int,
        prefix: str = "",
        max_entries: int | None = None,
        listings: ListingCache | None = None,
    ) -> None:
        self.base_fd = base_fd
        self.prefix = prefix
        self.max_entries = max_entries
        self.listings = listings
        self.entries_seen = 0
        self.stopped_early = False

    def _list(self, dir_fd: int, prefix: str) -> list[tuple[str, bool]] | None:
        """The directory's walk order; None when it takes the walk over its budget."""
        if self.listings is None:
            count, names = list_directory(dir_fd)
        else:
            st = os.fstat(dir_fd)
            key = (st.st_ino, st.st_mtime_ns, st.st_ctime_ns)
            cached = self.listings.get(prefix)
            if cached is not None and cached[0] == key:
                count, names = cached[1]
            else:
                count, names = list_directory(dir_fd)
                if settled(st, time.time_ns()):
                    self.listings[prefix] = (key, (count, names))
        self.entries_seen += count
        if self.max_entries is not None and self.entries_seen > self.max_entries:
            self.stopped_early = True
            return None
        return names

    def __iter__(self) -> Iterator[Found]:
        for dir_fd, prefix, names in self.runs():
            for name in names:
                yield Found(prefix + name, dir_fd, name)

    def runs(self) -> Iterator[tuple[int, str, list[str]]]:
        """Consecutive documents of one directory: (dir fd, path prefix, names).

        Yielding runs rather than single documents keeps the per-document cost of
        a walk to the caller's own loop.
        """
        listing = self._list(self.base_fd, self.prefix)
        if listing is None:
            return
        stack = [_Level(self.base_fd, self.prefix, (), iter(listing))]
        closed = 1  # stack[1:closed] have their fd closed (always the shallowest ones)
        try:
            while stack:
                level = stack[-1]
                dir_fd = level.fd
                assert dir_fd is not None
                run: list[str] = []
                for name, is_dir in level.pending:
                    if not is_dir:
                        run.append(name)
                        continue
                    if run:
                        yield dir_fd, level.prefix, run
                        run = []
                    try:
                        child = open_dir_at(dir_fd, name, level.prefix + name)
                    except InvalidPath:
                        continue  # swapped for a symlink or a file since listing: never followed
                    if child is None:
                        continue  # removed since listing
                    child_prefix = f"{level.prefix}{name}/"
                    try:
                        child_listing = self._list(child, child_prefix)
                    except BaseException:
                        os.close(child)
                        raise
                    if child_listing is None:
                        os.close(child)
                        return
                    if len(stack) - closed >= MAX_OPEN_DIRS:
                        _park(stack[closed])
                        closed += 1
                    stack.append(_Level(child, child_prefix, (*level.segments, name),
                                        iter(child_listing)))
                    break
                else:
                    if run:
                        yield dir_fd, level.prefix, run
                    stack.pop()
                    if stack and stack[-1].fd is None:
                        closed -= 1
                        stack[-1].fd = self._reopen(stack[-1], dir_fd)
                    if dir_fd != self.base_fd:
                        os.close(dir_fd)
                    while stack and stack[-1].fd == -1:  # gone while we were below it: skip
                        stack.pop()
                        if stack and stack[-1].fd is None:
                            closed -= 1
                            stack[-1].fd = self._reopen(stack[-1], None)
        finally:
            for level in stack:
                if level.fd is not None and level.fd not in (-1, self.base_fd):
                    os.close(level.fd)

    def _reopen(self, level: _Level, child_fd: int | None) -> int:
        """Open a parked level again: `..` of the child just left, else from the base;
        -1 when neither is the directory that was parked (it was moved or replaced)."""
        for route in ("parent", "base"):
            try:
                if route == "parent":
                    if child_fd is None:
                        continue
                    fd: int | None = os.open("..", _DIR_FLAGS, dir_fd=child_fd)
                else:
                    fd = open_dirs(self.base_fd, level.segments, level.prefix)
            except (OSError, InvalidPath):
                continue
            if fd is None:
                continue
            st = os.fstat(fd)
            if (st.st_dev, st.st_ino) == level.ident:
                return fd
            os.close(fd)
        return -1


def _park(level: _Level) -> None:
    """Close a level's fd, remembering which directory it was so a reopen can check."""
    assert level.fd is not None
    st = os.fstat(level.fd)
    level.ident = (st.st_dev, st.st_ino)
    os.close(level.fd)
    level.fd = None


@contextmanager
def opened(fd: int | None) -> Iterator[int | None]:
    """Close `fd` (when not None) on leaving the block."""
    try:
        yield fd
    finally:
        if fd is not None:
            os.close(fd)


DIRECTORY_MODE = 0o700
DOCUMENT_MODE = 0o600
"""SPEC §2: file permissions, not the protocol, keep other users out of a scope."""
TIDY_MAX_DEPTH = 520
"""No legal document lies deeper (1,024 bytes of path); deeper hand-made folders are
left alone rather than holding a descriptor per level."""
_UNFIXABLE = frozenset({errno.EROFS, errno.EPERM, errno.EACCES})


@dataclass
class Tidied:
    """What a start-up tidy of the memory root did."""

    removed_temps: int = 0
    fixed_modes: int = 0
    """Files or directories that were group/other accessible and are now private."""
    unfixable: int = 0
    """Entries whose mode or temp file could not be changed (a read-only file system)."""


def tidy_tree(root_fd: int) -> Tidied:
    """Remove the store's own leftover `.amux-tmp-*` files and make every directory
    0700 and every file 0600 where group or others had access (files added by hand
    keep the creator's umask, e.g. 0644); never follows a symlink, touches nothing else."""
    tidied = Tidied()
    stack: list[tuple[int, Iterator[os.DirEntry[str]]]] = [(root_fd, _entries(root_fd))]
    try:
        while stack:
            dir_fd, entries = stack[-1]
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    if len(stack) > TIDY_MAX_DEPTH:
                        continue
                    try:
                        child = os.open(entry.name, _DIR_FLAGS, dir_fd=dir_fd)
                    except OSError:
                        continue  # gone, or swapped for a symlink: never followed
                    make_private(child, DIRECTORY_MODE, tidied)
                    stack.append((child, _entries(child)))
                    break
                if not entry.is_file(follow_symlinks=False):
                    continue
                if entry.name.startswith(TEMP_PREFIX):
                    try:
                        os.unlink(entry.name, dir_fd=dir_fd)
                        os.fsync(dir_fd)
                        tidied.removed_temps += 1
                    except FileNotFoundError:
                        pass
                    except OSError as exc:
                        if exc.errno not in _UNFIXABLE:
                            raise
                        tidied.unfixable += 1
                    continue
                if entry.stat(follow_symlinks=False).st_mode & 0o077:
                    try:
                        fd = os.open(entry.name, _READ_FLAGS, dir_fd=dir_fd)
                    except OSError:
                        continue  # gone or swapped since the listing
                    try:
                        if stat.S_ISREG(os.fstat(fd).st_mode):
                            make_private(fd, DOCUMENT_MODE, tidied)
                    finally:
                        os.close(fd)
            else:
                stack.pop()
                if dir_fd != root_fd:
                    os.close(dir_fd)
    finally:
        for dir_fd, _entries_left in stack:
            if dir_fd != root_fd:
                os.close(dir_fd)
    return tidied


def _entries(dir_fd: int) -> Iterator[os.DirEntry[str]]:
    with os.scandir(dir_fd) as listing:
        return iter(list(listing))


def make_private(fd: int, mode: int, tidied: Tidied) -> None:
    """`fchmod` to `mode` if group or others have any access; counted in `tidied`."""
    if not os.fstat(fd).st_mode & 0o077:
        return
    try:
        os.fchmod(fd, mode)
        tidied.fixed_modes += 1
    except OSError as exc:
        if exc.errno not in _UNFIXABLE:
            raise
        tidied.unfixable += 1
