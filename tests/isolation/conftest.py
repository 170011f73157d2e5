"""The `world` of isolated-run tests (tests/isolation/world.py): made and undone here."""

from __future__ import annotations

import pwd
import secrets
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.hostile import require_root
from tests.hubproc import HubProcess
from tests.isolation.world import AGENT, AGENTS, World


@pytest.fixture
def world(short_home: Path) -> Iterator[World]:
    require_root("isolated runs (creating users and switching to them)")
    tag = secrets.token_hex(3)
    names = [f"amuxt-a-{tag}", f"amuxt-b-{tag}"]
    made: list[Path] = []
    hub: HubProcess | None = None
    try:  # everything below is undone in `finally`, however far it got
        scratch = Path(tempfile.mkdtemp(prefix="amux-iso-"))
        made.append(scratch)
        scratch.chmod(0o777)  # the agents (as A) write their records here
        shared = Path(tempfile.mkdtemp(prefix="amux-shared-")) / "hub.sock"
        made.append(shared.parent)
        shared.parent.chmod(0o755)
        runs = Path(tempfile.mkdtemp(prefix="amux-runs-")) / "runs"
        made.append(runs.parent)
        runs.parent.chmod(0o711)  # like /var/lib: traversable
        agents = scratch / "bin"
        agents.mkdir(mode=0o755)
        for name in AGENTS:
            (agents / name).write_text(AGENT)
            (agents / name).chmod(0o755)
        for name in names:
            subprocess.run(["useradd", "--create-home", "--shell", "/bin/sh", name], check=True)
        hub = HubProcess(short_home)
        for key, value in (("memory.enabled", "true"), ("isolation.enabled", "true"),
                           ("listeners.shared_socket", str(shared))):
            hub.call("/v1/admin/config", {"action": "set", "key": key, "value": value})
        for name in names:
            hub.call("/v1/admin/principals", {"action": "add", "name": name})
        hub.stop()
        hub = HubProcess(short_home)  # the shared socket opens at start
        yield World(hub, {n: pwd.getpwnam(n) for n in names}, runs, agents, shared, scratch)
    finally:
        if hub is not None:
            hub.stop()
        for name in names:
            subprocess.run(["pkill", "-KILL", "-u", name], capture_output=True)
            subprocess.run(["userdel", "--remove", name], capture_output=True)
        for path in made:
            shutil.rmtree(path, ignore_errors=True)
