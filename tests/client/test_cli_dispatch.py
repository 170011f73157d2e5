"""The memory CLI dispatches by its command table alone (issue 33): each command's handler
sits in its row, a row cannot be made without one, and nothing falls through to another
command (`amux memory --pretty mcp` used to reach `export` and crash)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from amux.client import cli
from amux.client.args import Command

INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {},
    "clientInfo": {"name": "test", "version": "1"}}}


def test_a_command_cannot_be_declared_without_its_handler() -> None:
    with pytest.raises(TypeError):
        Command("delete everything")  # type: ignore[call-arg]


def test_each_command_runs_the_handler_in_its_own_row(monkeypatch: pytest.MonkeyPatch) -> None:
    ran: list[str] = []
    for name, command in cli.COMMANDS.items():
        def record(args: Any, start_hub: Any, name: str = name) -> dict[str, str]:
            ran.append(name)
            return {}
        monkeypatch.setattr(command, "run", record)
    for name in cli.COMMANDS:
        argv = {"search": ["search", "x"], "list": ["list"], "log": ["log"],
                "doctor": ["doctor"], "mcp": ["mcp"]}.get(name, [name, "a.md"])
        if name in ("upsert", "forget", "restore"):
            argv += ["--expected-revision", "absent"]
        if name == "restore":
            argv += ["--revision", "absent"]
        assert cli.main(argv) == 0, name
        assert ran[-1] == name
    assert ran == list(cli.COMMANDS)


@pytest.mark.parametrize("argv", [["--pretty", "mcp"], ["mcp", "--pretty"]])
def test_the_mcp_server_with_pretty_serves_mcp(argv: list[str], tmp_path: Path) -> None:
    """The user's path: the installed command, a line of MCP in, its answer out."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AMUX_")}
    env["AMUX_HOME"] = str(tmp_path / "home")
    done = subprocess.run([sys.executable, "-m", "amux", "memory", *argv],
                          input=json.dumps(INITIALIZE) + "\n", capture_output=True, text=True,
                          env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout.splitlines()[0])
    assert answer["result"]["serverInfo"]["name"] == "amux"
    assert not (tmp_path / "home" / "log" / "cli-errors.log").exists()

