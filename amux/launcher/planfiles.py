"""The files a launch plan gives the agent (an instruction file it names), written before
every launch from the plan, so on resume from the frozen text: 0600, temp-and-replace.

They are written by the user the agent runs as: for an isolated run, in the target's own
directory by the helper acting as the target (`amux.launcher.userfiles`), so they are
the target's, and a link the target planted leads only where the target could write.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from amux.adapters.base import PlanFile
from amux.errors import InternalError
from amux.launcher.writes import Write


def written(file: PlanFile) -> Write:
    """What `write` creates for `file`: a private one's text is not shown."""
    if file.private:
        return Write(Path(file.path), "file", file.mode, agents=True, content=(
            f"withheld: {len(file.text.encode()):,} bytes holding what your own files hold "
            "(MCP servers' tokens)"))
    return Write(Path(file.path), "file", file.mode, agents=True, text=file.text)


def write(files: Sequence[PlanFile]) -> None:
    """Write `files`, making any missing directory above one (0700: Cline's rule file is
    three levels into the session's directory)."""
    for file in files:
        entry = written(file)
        try:
            for directory in reversed([entry.path.parent, *entry.path.parent.parents]):
                if not directory.exists():
                    directory.mkdir(mode=0o700)
            entry.write(file.text.encode("utf-8"))
        except (OSError, ValueError) as exc:
            raise InternalError(f"cannot write {entry.path} for the agent: {exc}") from None
