"""An agent's `--version`, asked the way every short command of a launch is asked
(issue 34: it had its own subprocess handling, which on a timeout killed only the direct
child, so a Node CLI's grandchild survived holding the pipes)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from amux.adapters import ADAPTERS
from amux.launcher import versions
from tests.wait import gone, wait_until


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
    wait_until(lambda: gone(grandchild), 5, "the --version command's grandchild to be killed")
    assert not (tmp_path / "home" / "cache" / "agent-versions.json").exists()


def test_without_asking_the_version_is_the_one_remembered_or_the_packages(
        tmp_path: Path) -> None:
    """A dry run starts nothing: the version remembered before, else the `version` of the
    npm package whose code the executable is (a script that would fail if started)."""
    package = tmp_path / "node_modules" / "@earendil-works" / "pi-coding-agent"
    (package / "dist" / "bundle").mkdir(parents=True)
    (package / "package.json").write_text('{"name": "x", "version": "1.6.0"}')
    code = package / "dist" / "bundle" / "cli.js"
    code.write_text(f"#!/bin/sh\ntouch {tmp_path}/started\nexit 1\n")
    code.chmod(0o755)
    link = tmp_path / "bin" / "pi"
    link.parent.mkdir()
    link.symlink_to(code)
    home = tmp_path / "home"
    assert versions.cached_version(home, ADAPTERS["pi"], str(link), ask=False) == "1.6.0"
    assert not (tmp_path / "started").exists() and not home.exists()
    alone = tmp_path / "alone" / "pi"
    alone.parent.mkdir()
    alone.write_text("#!/bin/sh\nexit 1\n")
    assert versions.cached_version(home, ADAPTERS["pi"], str(alone), ask=False) is None
