"""Real adversaries and real faults for tests: a throwaway Unix user, a small tmpfs.

Both need root (CI runs as root). Outside CI a missing root skips the test; in CI
(`CI=true`) it fails, so the attack or fault tests can never pass as green unrun.
"""

from __future__ import annotations

import fcntl
import os
import pwd
import secrets
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import pytest


def require_root(why: str) -> None:
    """Fail in CI, skip elsewhere, unless we are root."""
    if os.geteuid() == 0:
        return
    message = f"{why} needs root"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(message)
    pytest.skip(message)


@contextmanager
def _user_database() -> Iterator[None]:
    """One useradd/userdel at a time across pytest-xdist workers.

    useradd does not wait for /etc/passwd's lock: a second one at the same moment
    fails with "cannot lock /etc/passwd".
    """
    with open(Path(tempfile.gettempdir()) / "amux-tests-users.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def add_user(name: str) -> pwd.struct_passwd:
    """Create a Unix user with a home (root only)."""
    with _user_database():
        subprocess.run(["useradd", "--create-home", "--shell", "/bin/sh", name], check=True,
                       capture_output=True)
    return pwd.getpwnam(name)


def remove_user(name: str) -> None:
    """Kill a user's processes and remove it with its home; quiet if already gone."""
    subprocess.run(["pkill", "-KILL", "-u", name], capture_output=True)
    with _user_database():
        subprocess.run(["userdel", "--remove", name], capture_output=True)


@contextmanager
def throwaway_user(prefix: str = "amuxt-x") -> Iterator[pwd.struct_passwd]:
    """A fresh Unix user with a home; its processes are killed and it is removed after."""
    require_root("a second Unix user")
    name = f"{prefix}-{secrets.token_hex(3)}"
    user = add_user(name)
    try:
        yield user
    finally:
        remove_user(name)


def as_user(user: pwd.struct_passwd, *argv: str, **kwargs: Any) -> subprocess.Popen[Any]:
    """Start `argv` as `user` (its uid, gid and no extra groups)."""
    return subprocess.Popen(list(argv), user=user.pw_uid, group=user.pw_gid, extra_groups=[],
                            **kwargs)


@contextmanager
def small_tmpfs(path: Path, size: str = "2m", mode: str = "0755") -> Iterator[Path]:
    """A real tmpfs of `size` mounted at `path` (created), unmounted after."""
    require_root("a tmpfs mount")
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode={mode}", "tmpfs",
                    str(path)], check=True, capture_output=True)
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], capture_output=True)


def fill(directory: Path) -> Path:
    """Fill the file system holding `directory` until a write fails with ENOSPC.

    Unbuffered, so no refused byte is left in a buffer for `close` to fail on.
    """
    filler = directory / "filler"
    with open(filler, "wb", buffering=0) as handle, suppress(OSError):
        while True:
            handle.write(b"\0" * 65536)
    with open(filler, "ab", buffering=0) as handle, suppress(OSError):  # the last partial block
        while True:
            handle.write(b"\0")
    return filler


def remount(path: Path, *, read_only: bool) -> None:
    """Make a mount read-only (or writable again) in place."""
    flag = "ro" if read_only else "rw"
    subprocess.run(["mount", "-o", f"remount,{flag}", str(path)], check=True,
                   capture_output=True)
