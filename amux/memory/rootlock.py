"""The exclusive lock on a memory root: one Hub per root (SPEC §2).

An advisory `flock` on `<root>/.amux-root.lock` (a dot-file, so no operation sees
it). The kernel drops the lock when the holder dies, so a crashed Hub never
leaves a stale lock behind; the holder's pid is written into the file only to
name it in the error a second opener gets.

The lock is taken on a read-only descriptor (`flock` needs no write access): a
Hub keeps no file open for writing, so its storage can be remounted read-only
under it, and a read-only root still locks when the file exists. Whatever sits
at the lock's name must be a regular file: a symlink, FIFO or directory planted
there is refused with one clear error instead of being followed or blocking.
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
from contextlib import suppress

from amux.errors import InternalError, RootLocked

LOCK_NAME = ".amux-root.lock"
_FLAGS = os.O_RDONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_NOT_A_FILE = (errno.ELOOP, errno.EISDIR, errno.ENXIO)
"""What opening a symlink (O_NOFOLLOW), a directory or a socket at the name gives."""


def try_lock(root_fd: int, root: str = "the memory root") -> int | None:
    """Take the exclusive lock; returns its fd, or None when another holder has it."""
    try:
        fd = os.open(LOCK_NAME, _FLAGS, 0o600, dir_fd=root_fd)
    except OSError as error:
        if error.errno in _NOT_A_FILE:
            raise _not_a_file(root_fd, root) from None
        raise
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise _not_a_file(root_fd, root)
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    except BaseException:
        os.close(fd)
        raise
    return fd


def lock_exclusive(root_fd: int, root: str) -> int:
    """Take the exclusive lock and record our pid, or raise `RootLocked` naming the holder."""
    fd = try_lock(root_fd, root)
    if fd is None:
        raise RootLocked(
            f"memory root {root} is already in use{_holder(root_fd)}; "
            "one Hub serves a memory root: stop the other one or talk to it"
        )
    # Best effort: the pid only names us in a second opener's error, and a full or
    # read-only disk must not stop a Hub that could still serve reads.
    with suppress(OSError):
        pid_fd = os.open(LOCK_NAME, os.O_WRONLY | os.O_TRUNC | os.O_NOFOLLOW | os.O_NONBLOCK
                         | os.O_CLOEXEC, dir_fd=root_fd)
        try:
            os.write(pid_fd, f"{os.getpid()}\n".encode())
        finally:
            os.close(pid_fd)  # another description of the file: our flock stays
    return fd


def _not_a_file(root_fd: int, root: str) -> InternalError:
    try:
        mode = os.lstat(LOCK_NAME, dir_fd=root_fd).st_mode
    except OSError:
        mode = 0
    kinds = ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISFIFO, "a FIFO"),
             (stat.S_ISDIR, "a directory"), (stat.S_ISSOCK, "a socket"))
    kind = next((name for test, name in kinds if test(mode)), "not a regular file")
    return InternalError(
        f"{LOCK_NAME} in {root} is {kind}, not the Hub's lock file (something else put it "
        "there): remove it (it holds no memory) and start the Hub again"
    )


def _holder(root_fd: int) -> str:
    try:
        fd = os.open(LOCK_NAME, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                     dir_fd=root_fd)
    except OSError:
        return ""
    try:
        pid = os.read(fd, 32).decode("ascii", "replace").strip()
    finally:
        os.close(fd)
    return f" by pid {pid}" if pid.isdigit() else ""
