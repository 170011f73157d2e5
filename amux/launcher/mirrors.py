"""The mirrors a launch plan gives the agent (`PlanMirror`): made before every launch,
restored after it.

A mirror shows its source as it is at launch, entry by entry as symbolic links, so what
the agent reads or writes through them is the real thing; only the plan's own names are
its own. What the agent creates in the mirror itself, or replaces there (a file it writes
to a temporary name and renames over a link), is moved back into the source when it exits,
newest over older, so the agent's own state is never lost with the mirror; what cannot be
moved back (a directory where the source has one too, another file system) stays, with a
warning naming it, and the mirror is kept. A launch killed before restoring leaves its
mirror behind: the next launch restores it first, and sets aside what still cannot go back.

An isolated run's mirror and source are in the target's home: all of this is done there by
the helper acting as the target (`amux.launcher.userfiles`), so the mirror is the target's
and nothing the target plants meanwhile leads anywhere the target could not go. Within a
mirror every entry is handled by name in a descriptor of its directory, and a plan file
the agent changed is read without blocking (`readfile`: a FIFO there is not waited on).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import time
from collections.abc import Sequence
from pathlib import Path

from amux.adapters.base import PlanFile, PlanMirror
from amux.errors import InternalError
from amux.launcher import readfile
from amux.launcher.writes import Write

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC


def written(mirror: PlanMirror) -> Write:
    """What `make` creates for `mirror`."""
    own = f", but for {', '.join(mirror.own)} (the plan's own)" if mirror.own else ""
    return Write(Path(mirror.path), "mirror", 0o700, agents=True,
                 content=f"a link to each entry of {mirror.source}{own}; what the agent "
                 "creates here is moved there when it exits")


def make(mirrors: Sequence[PlanMirror]) -> list[str]:
    """Make `mirrors` (outer before inner); the warnings of restoring a leftover one."""
    warnings = restore(mirrors) if any(os.path.lexists(m.path) for m in mirrors) else []
    for mirror in mirrors:  # what could not go back is set aside, never removed
        if os.path.lexists(mirror.path):
            path = Path(mirror.path)
            aside = f"{path.name}.kept-{time.strftime('%Y%m%d%H%M%S')}"
            try:
                parent = _open(path.parent)
                try:
                    os.rename(path.name, aside, src_dir_fd=parent, dst_dir_fd=parent)
                finally:
                    os.close(parent)
            except (OSError, ValueError) as exc:
                raise InternalError(f"cannot set aside {path}, left by an earlier "
                                    f"launch: {exc}") from None
            warnings.append(f"what an earlier launch left in {path} is now in "
                            f"{path.parent / aside}")
    for mirror in mirrors:
        entry = written(mirror)
        path = entry.path
        try:
            parent = _open(path.parent)
            try:
                os.mkdir(path.name, entry.bits, dir_fd=parent)
                fd = os.open(path.name, _DIR_FLAGS | os.O_NOFOLLOW, dir_fd=parent)
            finally:
                os.close(parent)
            try:
                for name in _names(mirror.source):
                    if name not in mirror.own:
                        os.symlink(os.path.join(mirror.source, name), name, dir_fd=fd)
            finally:
                os.close(fd)
        except (OSError, ValueError) as exc:
            raise InternalError(f"cannot make {path} for the agent: {exc}") from None
    return warnings


def restore(mirrors: Sequence[PlanMirror], files: Sequence[PlanFile] = ()) -> list[str]:
    """Move back what the agent wrote in `mirrors` (inner before outer) and remove them
    unless something had to stay; a warning for each mirror that keeps something, and
    for each of the plan's `files` in a mirror that the agent changed (set aside)."""
    warnings, notes = [], []
    for mirror in reversed(mirrors):
        try:
            fd = _open(Path(mirror.path))
        except FileNotFoundError:
            continue
        except (OSError, ValueError) as exc:
            warnings.append(f"cannot restore {mirror.path}: {exc}")
            continue
        try:
            notes += _set_aside_changed(fd, mirror, files, Path(mirrors[0].path).parent)
            kept = _move_back(fd, mirror)
        finally:
            os.close(fd)
        if kept:
            warnings.append(f"kept {mirror.path}: {', '.join(sorted(kept))} could not be "
                            f"moved back into {mirror.source}; move them by hand")
    if not warnings:
        for mirror in mirrors:  # the outer ones hold the inner ones
            _remove(Path(mirror.path))
    return warnings + notes


def _remove(path: Path) -> None:
    with contextlib.suppress(OSError, ValueError):  # gone, or not ours to reach
        parent = _open(path.parent)
        try:
            shutil.rmtree(path.name, dir_fd=parent, ignore_errors=True)
        finally:
            os.close(parent)


def _set_aside_changed(fd: int, mirror: PlanMirror, files: Sequence[PlanFile],
                       keep: Path) -> list[str]:
    """The plan's own files in `mirror` that the agent rewrote (Gemini's `/settings`):
    amux writes them afresh for every launch, so the change would be lost with the
    mirror; each is moved to `keep` (the directory holding the mirrors) as
    `<name>.changed-<time>`, and named."""
    notes = []
    for file in files:
        name = os.path.basename(file.path)
        if os.path.dirname(file.path) != mirror.path or name not in mirror.own:
            continue
        try:
            if readfile.read_bytes(name, dir_fd=fd, follow=False) in (
                    None, file.text.encode("utf-8")):
                continue
            aside = f"{name}.changed-{time.strftime('%Y%m%d%H%M%S')}"
            parent = _open(keep)
            try:
                os.rename(name, aside, src_dir_fd=fd, dst_dir_fd=parent)
            finally:
                os.close(parent)
        except (OSError, ValueError):
            continue  # gone or unreadable: nothing to keep
        real = os.path.join(mirror.source, name)
        notes.append(f"the agent changed {name} during this launch; amux gives it its own "
                     f"copy of {real} for each launch, so the change is not in {real}: it is "
                     f"kept in {keep / aside}")
    return notes


def _move_back(fd: int, mirror: PlanMirror) -> list[str]:
    """The names of the mirror's own entries that had to stay."""
    kept: list[str] = []
    source: int | None = None
    try:
        for name in os.listdir(fd):
            if name in mirror.own or _is_our_link(fd, name, mirror):
                continue
            try:
                if source is None:
                    source = _open(Path(mirror.source), create=True)
                there = _kind(name, source)
                here = _kind(name, fd)
                if there is None or (there != "dir" and here != "dir"):
                    os.rename(name, name, src_dir_fd=fd, dst_dir_fd=source)
                    continue
            except (OSError, ValueError):
                pass
            kept.append(name)
    finally:
        if source is not None:
            os.close(source)
    return kept


def _is_our_link(fd: int, name: str, mirror: PlanMirror) -> bool:
    try:
        return os.readlink(name, dir_fd=fd) == os.path.join(mirror.source, name)
    except OSError:  # not a link
        return False


def _kind(name: str, fd: int) -> str | None:
    try:
        mode = os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode
    except FileNotFoundError:
        return None
    return "dir" if stat.S_ISDIR(mode) else "other"


def _names(source: str) -> list[str]:
    try:
        return sorted(os.listdir(source))
    except (FileNotFoundError, NotADirectoryError):
        return []


def _open(directory: Path, create: bool = False) -> int:
    """A descriptor of `directory` (made, 0700, if `create` and it is missing)."""
    if create:
        with contextlib.suppress(FileExistsError):
            os.mkdir(directory, 0o700)
    return os.open(directory, _DIR_FLAGS)
