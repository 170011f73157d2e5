"""The files a plan gives the agent: 0600, replaced whole (an isolated run's are written
by the target itself: tests/isolation/test_target_files.py)."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from amux.adapters.base import PlanFile
from amux.errors import AmuxError
from amux.launcher import planfiles


def test_written_private_and_replaced_whole(tmp_path: Path) -> None:
    path = tmp_path / "pi-append-system.md"
    path.write_text("old and longer text")
    planfiles.write([PlanFile(str(path), "é new")])
    assert path.read_text(encoding="utf-8") == "é new"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_a_file_that_cannot_be_written_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("")
    with pytest.raises(AmuxError, match=r"cannot write .*f\.md for the agent"):
        planfiles.write([PlanFile(str(tmp_path / "a-file" / "f.md"), "x")])


def test_missing_directories_above_a_file_are_made_private(tmp_path: Path) -> None:
    """Cline's rule file is three directories into the session's own (`Documents/Cline/
    Rules`, where Cline looks below the rules root the plan names)."""
    path = tmp_path / "cline-rules" / "Documents" / "Cline" / "Rules" / "amux.md"
    planfiles.write([PlanFile(str(path), "x")])
    assert path.read_text() == "x"
    assert stat.S_IMODE((tmp_path / "cline-rules").stat().st_mode) == 0o700
