"""Race-aware file primitives: directory file descriptors, `O_NOFOLLOW`, temp-and-replace.

Every path below the memory root is resolved one segment at a time with `openat`
and `O_NOFOLLOW`, so a symlink anywhere on the way is refused at the moment of use
rather than by a check-then-open that an attacker could race. Durable writes go
through one helper (`write_atomic_at`): temp file in the target directory, fsync,
rename over the target, fsync the directory. `write_file_atomic` offers the same
for any other file amux writes (config, session state, materialized files).
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

from amux.memory.errors import InvalidPath
from amux.memory.paths import segment_problem

TEMP_PREFIX = ".amux-tmp-"
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_TEMP_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def _refusal(dir_fd: int, name: str) -> str:
    """Why `name` in `dir_fd` cannot be used as a directory."""
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return "a parent directory vanished while it was being opened"
    if stat.S_ISLNK(st.st_mode):
        return f"'{name}' is a symlink; symlinks are refused"
    return f"'{name}' is a file where a directory is needed"


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
        raise InvalidPath(label, _refusal(dir_fd, name)) from None
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
        chunks = []
        remaining = st.st_size
        while True:
            chunk = os.read(fd, max(remaining, 65536))
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
        data = chunks[0] if len(chunks) == 1 else b"".join(chunks)
        return data, st
    finally:
        os.close(fd)


def write_atomic_at(dir_fd: int, name: str, data: bytes, mode: int = 0o600) -> None:
    """Durably replace `name` in `dir_fd` with `data` (temp, fsync, rename, fsync dir)."""
    temp = TEMP_PREFIX + secrets.token_hex(8)
    fd = os.open(temp, _TEMP_FLAGS, mode, dir_fd=dir_fd)
    try:
        try:
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.rename(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with suppress(FileNotFoundError):
            os.unlink(temp, dir_fd=dir_fd)
        raise
    os.fsync(dir_fd)


def unlink_at(dir_fd: int, name: str) -> None:
    """Remove `name` from `dir_fd` and fsync the directory."""
    os.unlink(name, dir_fd=dir_fd)
    os.fsync(dir_fd)


def write_file_atomic(path: Path, data: bytes, mode: int = 0o600) -> None:
    """Temp-and-replace for any file amux writes outside the store (parents must exist)."""
    dir_fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        write_atomic_at(dir_fd, path.name, data, mode)
    finally:
        os.close(dir_fd)


def is_document_name(name: str) -> bool:
    """Whether a directory entry name can be a document's last segment."""
    return name.endswith(".md") and segment_problem(name) is None


@dataclass
class Found:
    """A document found by `TreeWalk`: its logical path and where to open it."""

    path: str
    dir_fd: int
    name: str
    entry: os.DirEntry[str]


class TreeWalk:
    """Documents below a directory fd in bytewise path order, never following symlinks.

    Entries inside one directory are sorted by name, with `/` appended to directory
    names: that makes the depth-first order equal the bytewise order of full paths.
    With `max_entries` set, the walk stops after that many directory entries and
    sets `stopped_early`.
    """

    def __init__(self, base_fd: int, prefix: str = "", max_entries: int | None = None) -> None:
        self.base_fd = base_fd
        self.prefix = prefix
        self.max_entries = max_entries
        self.entries_seen = 0
        self.stopped_early = False

    def __iter__(self) -> Iterator[Found]:
        return self._walk(self.base_fd, self.prefix)

    def _walk(self, dir_fd: int, prefix: str) -> Iterator[Found]:
        with os.scandir(dir_fd) as listing:
            entries = list(listing)
        self.entries_seen += len(entries)
        if self.max_entries is not None and self.entries_seen > self.max_entries:
            self.stopped_early = True
            return
        keyed = []
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                if segment_problem(entry.name) is None:
                    keyed.append((os.fsencode(entry.name) + b"/", entry, True))
            elif entry.is_file(follow_symlinks=False) and is_document_name(entry.name):
                keyed.append((os.fsencode(entry.name), entry, False))
        keyed.sort(key=lambda item: item[0])
        for _key, entry, is_dir in keyed:
            if is_dir:
                try:
                    child = open_dir_at(dir_fd, entry.name, prefix + entry.name)
                except InvalidPath:
                    continue  # swapped for a symlink or a file since listing: never followed
                if child is None:
                    continue  # removed since listing
                try:
                    yield from self._walk(child, f"{prefix}{entry.name}/")
                finally:
                    os.close(child)
                if self.stopped_early:
                    return
            else:
                yield Found(prefix + entry.name, dir_fd, entry.name, entry)


@contextmanager
def opened(fd: int | None) -> Iterator[int | None]:
    """Close `fd` (when not None) on leaving the block."""
    try:
        yield fd
    finally:
        if fd is not None:
            os.close(fd)


def remove_stale_temps(root_fd: int) -> int:
    """Delete the store's own leftover `.amux-tmp-*` files below the root; nothing else."""
    removed = 0
    with os.scandir(root_fd) as listing:
        entries = list(listing)
    dirty = False
    for entry in entries:
        if entry.is_dir(follow_symlinks=False):
            try:
                child = os.open(entry.name, _DIR_FLAGS, dir_fd=root_fd)
            except OSError:
                continue
            try:
                removed += remove_stale_temps(child)
            finally:
                os.close(child)
        elif entry.name.startswith(TEMP_PREFIX) and entry.is_file(follow_symlinks=False):
            os.unlink(entry.name, dir_fd=root_fd)
            dirty = True
            removed += 1
    if dirty:
        os.fsync(root_fd)
    return removed
