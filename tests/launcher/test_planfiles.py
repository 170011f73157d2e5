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
    with pytest.raises(AmuxError, match=r"cannot write .*f\.md for the agent"):
        planfiles.write([PlanFile(str(tmp_path / "absent" / "f.md"), "x")])
