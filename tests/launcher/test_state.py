"""amux/launcher/state.py: sessions saved by an older amux (an older `state.json` shape) are
migrated when read, and resume; one that cannot be is refused saying why and what to do."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from amux import __version__
from tests.hubproc import HubProcess
from tests.launcher.fakeagents import Launcher, enable

pytestmark = pytest.mark.timeout(120)


def as_version_1(session: Path) -> dict[str, object]:
    """Rewrite a session's state as amux 0.1.0 saved it before `no_memory_reason` (state
    version 1); what it held."""
    path = session / "state.json"
    data = json.loads(path.read_text())
    del data["no_memory_reason"]
    data["version"] = 1
    path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    return dict(data)


def sessions(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "amux", "sessions", *args],
                          env={"AMUX_HOME": str(home), "PATH": "/usr/bin:/bin"},
                          capture_output=True, text=True, timeout=60)


def test_a_session_of_the_previous_state_version_is_migrated_and_resumes(
        hub: HubProcess, tmp_path: Path) -> None:
    launcher = Launcher(hub.home, tmp_path)
    enable(hub)
    assert launcher.run("claude", "--", "-p", "one").returncode == 0
    enable(hub, False)
    assert launcher.run("claude", "--", "-p", "one").returncode == 0
    bound, unbound = sorted(launcher.sessions(),  # ids of one second sort at random
                            key=lambda path: json.loads((path / "state.json").read_text())[
                                "created_at"])
    saved = as_version_1(bound)
    warned = as_version_1(unbound)["warnings"]
    assert isinstance(warned, list)
    shown = json.loads(sessions(hub.home, "show", bound.name).stdout)
    assert (shown["version"], shown["no_memory_reason"]) == (2, None)
    assert shown["protocol"] == saved["protocol"] and shown["binding"] == "global"
    listed = json.loads(sessions(hub.home, "list").stdout)["sessions"]
    assert [entry["no_memory_reason"] for entry in listed] == [None, warned[0]]
    assert "memory.enabled = false" in warned[0]
    enable(hub)
    resumed = launcher.run("--resume", bound.name, "--", "-p", "two")
    assert resumed.returncode == 0, resumed.stderr
    first, _, second = launcher.records()
    assert second["argv"][0] == "--resume"
    assert [a for a in first["argv"] if a.startswith("--append-system-prompt=")] == [
        a for a in second["argv"] if a.startswith("--append-system-prompt=")]


def test_a_newer_or_unknown_state_version_says_why_and_what_to_do(
        hub: HubProcess, tmp_path: Path) -> None:
    launcher = Launcher(hub.home, tmp_path)
    assert launcher.run("claude", "--", "-p", "one").returncode == 0
    [session] = launcher.sessions()
    path = session / "state.json"
    data = json.loads(path.read_text())
    path.write_text(json.dumps({**data, "version": 3, "a_field_of_version_3": True}))
    done = launcher.run("--resume", session.name)
    assert (done.returncode, done.stderr) == (
        2, f"amux run: invalid_argument: {path} was saved by a newer amux (state version 3; "
        f"amux {__version__} reads versions up to 2): resume it with that amux (upgrade this "
        "one: `pipx upgrade amux`, or `git pull` and install the checkout again), or start a "
        "new session\n")
    path.write_text(json.dumps({**data, "version": 0}))
    assert launcher.run("--resume", session.name).stderr == (
        f"amux run: invalid_argument: {path} is not a session state amux can read (state "
        "version 0 is older than any this amux migrates (1 to 2)), so it cannot be resumed: "
        f"start a new session instead, and remove this one: rm -r {session}\n")
