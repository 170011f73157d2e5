"""An agent's `--version`, asked the way every short command of a launch is asked
(issue 34: it had its own subprocess handling, which on a timeout killed only the direct
child, so a Node CLI's grandchild survived holding the pipes)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from amux.adapters import ADAPTERS
from amux.launcher import versions


def test_a_version_that_never_comes_is_given_up_with_all_it_started(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(versions, "VERSION_TIMEOUT_SECONDS", 1.0)
    pid_file = tmp_path / "grandchild.pid"
    agent = tmp_path / "pi"
    agent.write_text(f"#!/bin/sh\nsleep 300 &\necho $! > {pid_file}\nwait\n")
    agent.chmod(0o755)
    started = time.monotonic()
    assert versions.cached_version(tmp_path / "home", ADAPTERS["pi"], str(agent)) is None
    assert time.monotonic() - started < 10
    grandchild = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and _alive(grandchild):
        time.sleep(0.05)
    assert not _alive(grandchild), "the --version command's grandchild outlived it"
    assert not (tmp_path / "home" / "cache" / "agent-versions.json").exists()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as handle:  # a zombie is gone for this purpose
        return handle.read().rpartition(")")[2].split()[0] != "Z"
