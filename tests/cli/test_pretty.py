"""`--pretty`: rich views in the installed `amux`, indented JSON in the bare client."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.hubproc import HubProcess, amux


@pytest.fixture
def hub(short_home: Path) -> Iterator[HubProcess]:
    process = HubProcess(short_home)
    process.call("/v1/admin/config", {"action": "set", "key": "memory.enabled", "value": "true"})
    yield process
    process.stop()


def test_pretty_views(hub: HubProcess) -> None:
    amux(hub.home, "memory", "upsert", "projects/p/a.md", "--expected-revision", "absent",
         stdin="# Title\nuse pytest always\n")
    code, shown, _ = amux(hub.home, "memory", "--pretty", "search", "pytest")
    assert code == 0 and "projects/p/a.md" in shown and "2: use pytest always" in shown
    assert "1 files scanned" in shown
    code, page, _ = amux(hub.home, "memory", "--pretty", "show", "projects/p/a.md")
    assert code == 0 and "use pytest always" in page and "lines 1-2 of 2" in page
    code, error, _ = amux(hub.home, "memory", "--pretty", "show", "../x.md")
    assert code == 2 and "invalid_path" in str(error)


def test_bare_client_pretty_is_indented_json(hub: HubProcess) -> None:
    environment = {**os.environ, "AMUX_HUB": f"unix:{hub.socket_path}",
                   "AMUX_TOKEN": hub.owner_token}
    done = subprocess.run([sys.executable, "-m", "amux.client.cli", "--pretty", "show", "a.md"],
                          capture_output=True, text=True, env=environment, check=True)
    assert done.stdout.startswith("{\n  ")
    assert json.loads(done.stdout)["exists"] is False
