"""Reading a file that someone else may have put there: a user's config, an agent's
session file, a package's code.

A FIFO, a socket or a device at a config file's name would block a plain `open` for ever,
and a sparse file of hundreds of megabytes would be read whole. So the file is opened
`O_NONBLOCK` (opening a FIFO then returns at once), checked with `fstat` to be a regular
file, and read up to a limit. Links are followed: a launch reads a user's files as that
user (`amux.launcher.userfiles`), who may link them anywhere they can read themselves.
"""

from __future__ import annotations

import errno
import os
import stat

LIMIT = 4 << 20
"""The most a launch reads of one user file (instructions, settings): 4 MiB."""
_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY


class Unreadable(OSError):
    """Not a regular file, or larger than the limit; the message says which."""


def open_regular(path: str, dir_fd: int | None = None, *, follow: bool = True) -> int:
    """A descriptor of the regular file `path` (in `dir_fd`), opened without blocking;
    `IsADirectoryError` for a directory, `Unreadable` for anything else but a file,
    `FileNotFoundError` when absent."""
    fd = os.open(path, _FLAGS | (0 if follow else os.O_NOFOLLOW), dir_fd=dir_fd)
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):  # as a plain open says it
            raise IsADirectoryError(errno.EISDIR, "Is a directory", path)
        if not stat.S_ISREG(mode):
            raise Unreadable(errno.EINVAL, f"{path} is {_kind(mode)}, not a regular file")
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_bytes(path: str, limit: int = LIMIT, dir_fd: int | None = None, *,
               follow: bool = True) -> bytes | None:
    """The bytes of the regular file `path`, None when it does not exist; `Unreadable`
    when it is something else or longer than `limit`, OSError when it cannot be read."""
    try:
        fd = open_regular(path, dir_fd, follow=follow)
    except FileNotFoundError:
        return None
    try:
        chunks: list[bytes] = []
        size = 0
        while size <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
            size += len(chunk)
        raise Unreadable(errno.EFBIG, f"{path} is larger than {limit >> 20} MiB, more than "
                         "amux reads of a user's file; make it smaller")
    finally:
        os.close(fd)


def first_line(path: str, limit: int) -> str:
    """The first line of the regular file `path` (at most `limit` bytes), "" when it
    cannot be read."""
    try:
        fd = open_regular(path)
    except OSError:
        return ""
    with os.fdopen(fd, "rb") as handle:
        try:
            return handle.readline(limit).decode("utf-8", "replace")
        except OSError:
            return ""


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "a FIFO"),
                       (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device")):
        if test(mode):
            return name
    return "not a file"
