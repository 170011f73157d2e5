"""The files a launch plan gives the agent (an instruction file it names), written before
every launch from the plan, so on resume from the frozen text: 0600, temp-and-replace.

An isolated run's files go into the target's own directory, owned by the target. That
directory is the target's to change, so the path below its home is opened one
directory at a time without following links: a link the target planted makes the
launch fail instead of making root write somewhere else.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from amux.adapters.base import PlanFile
from amux.client.wire import ClientError
from amux.materializer.target import Target
from amux.memory.durable import write_atomic_at, write_file_atomic

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC


def write(files: Sequence[PlanFile], target: Target | None) -> None:
    for file in files:
        path, data = Path(file.path), file.text.encode("utf-8")
        try:
            if target is None:
                write_file_atomic(path, data, mode=file.mode)
                continue
            dir_fd = open_below(Path(target.home), path.parent)
            try:
                write_atomic_at(dir_fd, path.name, data, owner=(target.uid, target.gid),
                                mode=file.mode)
            finally:
                os.close(dir_fd)
        except (OSError, ValueError) as exc:
            raise ClientError("internal", f"cannot write {path} for the agent: {exc}") from None


def open_below(root: Path, directory: Path) -> int:
    """A descriptor of `directory`, reached from `root` through no symbolic link."""
    fd = os.open(root, _DIR_FLAGS)
    try:
        for part in directory.relative_to(root).parts:
            below = os.open(part, _DIR_FLAGS | os.O_NOFOLLOW, dir_fd=fd)
            os.close(fd)
            fd = below
    except BaseException:
        os.close(fd)
        raise
    return fd
