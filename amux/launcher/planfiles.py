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
from amux.durable import write_file_atomic
from amux.errors import InternalError


def write(files: Sequence[PlanFile]) -> None:
    for file in files:
        path = Path(file.path)
        try:
            write_file_atomic(path, file.text.encode("utf-8"), mode=file.mode)
        except (OSError, ValueError) as exc:
            raise InternalError(f"cannot write {path} for the agent: {exc}") from None
