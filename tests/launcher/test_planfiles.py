"""The files a plan gives the agent: 0600, replaced whole, and for an isolated run owned by
the target and never written through a link the target planted."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from amux.adapters.base import PlanFile
from amux.client.wire import ClientError
from amux.launcher import planfiles
from amux.materializer.target import Target

UID, GID = (1234, 1234) if os.geteuid() == 0 else (os.getuid(), os.getgid())


def target(home: Path) -> Target:
    return Target("someone", UID, GID, (GID,), str(home), "/bin/sh")


def test_written_private_and_replaced_whole(tmp_path: Path) -> None:
    path = tmp_path / "pi-append-system.md"
    path.write_text("old and longer text")
    planfiles.write([PlanFile(str(path), "é new")], None)
    assert path.read_text(encoding="utf-8") == "é new"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_an_isolated_runs_file_is_the_targets(tmp_path: Path) -> None:
    session = tmp_path / ".amux" / "sessions" / "s"
    session.mkdir(parents=True)
    planfiles.write([PlanFile(str(session / "f.md"), "text")], target(tmp_path))
    info = (session / "f.md").stat()
    assert (info.st_uid, info.st_gid) == (UID, GID) and stat.S_IMODE(info.st_mode) == 0o600


def test_a_link_below_the_targets_home_is_refused(tmp_path: Path) -> None:
    home, elsewhere = tmp_path / "home", tmp_path / "elsewhere"
    (elsewhere / "sessions" / "s").mkdir(parents=True)
    home.mkdir()
    (home / ".amux").symlink_to(elsewhere)
    with pytest.raises(ClientError, match="cannot write"):
        planfiles.write([PlanFile(str(home / ".amux" / "sessions" / "s" / "f.md"), "x")],
                        target(home))
    assert list((elsewhere / "sessions" / "s").iterdir()) == []
