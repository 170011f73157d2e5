"""The directories the Hub binds its sockets in: created by the Hub or verified (SPEC §4).

Whoever controls a socket's directory can move the Hub's socket aside and listen
in its place, and the next client sends that listener its token. So before
binding, every component of the directory's path is opened from `/` downwards,
each with `openat(O_NOFOLLOW)` in the one above (no name is looked up twice, no
symlink is followed), and checked with `fstat`:

- no component is a symlink: clients connect by this path later, and a link
  could be pointed elsewhere in between;
- every directory above is owned by root or by the Hub's user, and one that
  others may write must be sticky (like `/tmp`), so nobody else can rename what
  lies below it;
- the directory itself is the Hub's user's and writable by nobody else: private
  (0700; others' read bits are taken away) for the owner socket and
  `<AMUX_HOME>/run`, at most 0755 for the shared socket.

A missing component is created with `mkdir`, then opened and checked like an
existing one, so a directory someone else made in the meantime is caught.
Anything else refuses the start with `InvalidArgument` naming the path, what is
wrong and the fix.

The launcher verifies the roots of its run directories the same way (`RUNS`): whoever
controls one could rename a run directory (pointing an agent's connection config
elsewhere), or plant a token record that a later launch acts on.
"""

from __future__ import annotations

import os
import pwd
import stat
from pathlib import Path

from amux.errors import InvalidArgument
from amux.typing_light import NamedTuple

PRIVATE = 0o700
SHARED = 0o755

_OPEN = (os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
         | getattr(os, "O_PATH", os.O_RDONLY))  # O_PATH: search permission is enough


class Purpose(NamedTuple):
    """What a verified directory holds, for its errors."""

    what: str
    user: str
    """Who must own it, as the errors name them."""
    owner_risk: str
    writer_risk: str


SOCKETS = Purpose("socket", "the Hub's user", "its owner could listen in the Hub's place",
                  "who could replace the Hub's socket")
RUNS = Purpose("runs", "the launching user", "its owner could rename a run directory or "
               "plant a token record the launcher acts on", "who could rename run directories")


def ensure(directory: Path, mode: int, elsewhere: str,
           purpose: Purpose = SOCKETS) -> Path | None:
    """Create or verify `directory` for a socket (`mode`: PRIVATE or SHARED), or what
    `purpose` says it holds.

    `elsewhere` says how to choose another directory, for the error's fix. Returns
    the first directory on the way that other users cannot traverse (None: all can).
    """
    target = os.path.abspath(directory)
    names = [name for name in target.split("/") if name]
    if not names:
        raise _unsafe(target, f"the root directory cannot hold {purpose.what} files",
                      elsewhere, purpose)
    blocked: Path | None = None
    here = "/"
    fd = os.open(here, _OPEN)
    info = os.fstat(fd)
    try:
        for index, name in enumerate(names):
            _check_above(info, here, target, elsewhere, purpose)
            if blocked is None and not info.st_mode & stat.S_IXOTH:
                blocked = Path(here)
            here = os.path.join(here, name)
            child, created = _open(fd, name, here, target, mode, elsewhere, purpose)
            try:
                info = os.fstat(child)
                current = stat.S_IMODE(info.st_mode)
                wanted = mode if created else current
                if index == len(names) - 1:
                    _check_own(info, here, mode, elsewhere, purpose)
                    wanted &= mode
                if wanted != current:  # umask narrowed a new one; an old one had r/x for others
                    # By name, in `fd`: only root or we may rename entries there.
                    os.chmod(name, wanted, dir_fd=fd)
                    info = os.fstat(child)
            except BaseException:
                os.close(child)
                raise
            os.close(fd)
            fd = child
    finally:
        os.close(fd)
    if blocked is None and not info.st_mode & stat.S_IXOTH:
        blocked = Path(here)
    return blocked


def _open(parent: int, name: str, path: str, target: str, mode: int,
          elsewhere: str, purpose: Purpose) -> tuple[int, bool]:
    """`name` in the directory `parent`, created when missing; never through a symlink."""
    try:
        return _open_dir(parent, name, path, target, elsewhere, purpose), False
    except FileNotFoundError:
        pass
    created = True
    try:
        os.mkdir(name, mode, dir_fd=parent)
    except FileExistsError:
        created = False  # someone made it just now: checked like any other
    except OSError as error:
        raise _unsafe(target, f"cannot create {path}: {error.strerror}",
                      f"create it as root, owned by {purpose.user}: install -d -o "
                      f"{os.geteuid()} -m {mode:o} {path}, or {elsewhere}", purpose) from None
    return _open_dir(parent, name, path, target, elsewhere, purpose), created


def _open_dir(parent: int, name: str, path: str, target: str, elsewhere: str,
              purpose: Purpose) -> int:
    try:
        return os.open(name, _OPEN, dir_fd=parent)
    except FileNotFoundError:
        raise
    except OSError as error:  # ENOTDIR/ELOOP: a symlink or a file; EACCES
        try:
            info = os.stat(name, dir_fd=parent, follow_symlinks=False)
        except OSError:
            raise _unsafe(target, f"cannot open {path}: {error.strerror}", elsewhere,
                          purpose) from None
    if stat.S_ISLNK(info.st_mode):
        if info.st_uid in (0, os.geteuid()):
            fix = f"use the real path, {os.path.realpath(target)}, or {elsewhere}"
        else:
            fix = f"remove it (as root or its owner): rm {path}, or {elsewhere}"
        raise _unsafe(target, f"{path} is a symlink to {os.readlink(name, dir_fd=parent)}, "
                      f"owned by {_who(info.st_uid)}; a link could send clients elsewhere, so "
                      f"{purpose.what} files must be reached through real directories only",
                      fix, purpose)
    raise _unsafe(target, f"{path} is not a directory", f"remove it: rm {path}, or {elsewhere}",
                  purpose)


def _check_above(info: os.stat_result, path: str, target: str, elsewhere: str,
                 purpose: Purpose) -> None:
    """A directory on the way: root's or ours, and writable by others only if sticky."""
    if info.st_uid not in (0, os.geteuid()):
        raise _unsafe(target, f"{path}, on the way to it, is owned by {_who(info.st_uid)}, "
                      f"who could swap what lies below it; only root or {purpose.user}, "
                      f"{_who(os.geteuid())}, may own the directories above it", elsewhere,
                      purpose)
    if info.st_mode & 0o022 and not info.st_mode & stat.S_ISVTX:
        raise _unsafe(target, f"{path}, on the way to it, is writable by others "
                      f"(mode {stat.S_IMODE(info.st_mode):04o}) and not sticky, so they "
                      "could rename what lies below it", f"run: chmod go-w {path}, or {elsewhere}",
                      purpose)


def _check_own(info: os.stat_result, path: str, mode: int, elsewhere: str,
               purpose: Purpose) -> None:
    """The directory itself: ours, and writable by nobody else."""
    if info.st_uid != os.geteuid():
        raise _unsafe(path, f"it is owned by {_who(info.st_uid)}, not by {purpose.user}, "
                      f"{_who(os.geteuid())}; {purpose.owner_risk}",
                      f"remove it (as root or its owner): rm -r {path}, or {elsewhere}", purpose)
    if info.st_mode & 0o022:
        raise _unsafe(path, f"it is writable by others (mode {stat.S_IMODE(info.st_mode):04o}), "
                      f"{purpose.writer_risk}", f"run: chmod {mode:o} {path}, or {elsewhere}",
                      purpose)


def _unsafe(path: str, problem: str, fix: str, purpose: Purpose) -> InvalidArgument:
    return InvalidArgument(f"unsafe {purpose.what} directory {path}: {problem}; {fix}")


def _who(uid: int) -> str:
    try:
        return f"uid {uid} ({pwd.getpwuid(uid).pw_name})"
    except KeyError:
        return f"uid {uid}"
