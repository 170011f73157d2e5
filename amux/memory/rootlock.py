"""The exclusive lock on a memory root: one Hub per root (SPEC §2).

An advisory `flock` on `<root>/.amux-root.lock` (a dot-file, so no operation sees
it). The kernel drops the lock when the holder dies, so a crashed Hub never
leaves a stale lock behind; the holder's pid is written into the file only to
name it in the error a second opener gets.
"""

from __future__ import annotations

import fcntl
import os

from amux.memory.errors import RootLocked

LOCK_NAME = ".amux-root.lock"
_FLAGS = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC


def try_lock(root_fd: int) -> int | None:
    """Take the exclusive lock; returns its fd, or None when another holder has it."""
    fd = os.open(LOCK_NAME, _FLAGS, 0o600, dir_fd=root_fd)
    try:
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
    fd = try_lock(root_fd)
    if fd is None:
        raise RootLocked(
            f"memory root {root} is already in use{_holder(root_fd)}; "
            "one Hub serves a memory root: stop the other one or talk to it"
        )
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    return fd


def _holder(root_fd: int) -> str:
    try:
        fd = os.open(LOCK_NAME, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=root_fd)
    except OSError:
        return ""
    try:
        pid = os.read(fd, 32).decode("ascii", "replace").strip()
    finally:
        os.close(fd)
    return f" by pid {pid}" if pid.isdigit() else ""
