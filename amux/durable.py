"""Durable temp-and-replace writes: the one way amux replaces a file.

Temp file in the target directory (`O_EXCL | O_NOFOLLOW`), write, fsync, rename
over the target, fsync the directory. The store writes documents through
`write_atomic_at` (it holds directory file descriptors); `write_file_atomic`
does the same for every other file amux writes (config, identities, session
state, connection configs). Kept apart from `fs` so the launcher and the Hub's
small files do not import the store's tree walker.
"""

from __future__ import annotations

import os
from contextlib import suppress
from pathlib import Path

TEMP_PREFIX = ".amux-tmp-"
_TEMP_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def write_atomic_at(dir_fd: int, name: str, data: bytes, mode: int = 0o600,
                    owner: tuple[int, int] | None = None) -> None:
    """Durably replace `name` in `dir_fd` with `data` (temp, fsync, rename, fsync dir);
    `owner` (uid, gid) is given to the temp file before anything is written to it."""
    temp = TEMP_PREFIX + os.urandom(8).hex()
    fd = os.open(temp, _TEMP_FLAGS, mode, dir_fd=dir_fd)
    try:
        try:
            if owner is not None:
                os.fchown(fd, *owner)
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
