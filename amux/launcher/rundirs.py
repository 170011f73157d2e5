"""What every run directory records so a dead launcher's leftovers can be cleaned up.

A run directory (non-isolated: `<AMUX_HOME>/run/agents/<id>`; isolated: under the
runs root) holds `launcher.pid` and, when a delegated token was issued,
`token.json` with the principal and token id (no secret). The next launch finds
the directories whose launcher is gone, revokes their tokens and removes them.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from amux.memory.durable import write_file_atomic

CONFIG_NAME = "memory.json"
"""The agent's connection config inside its run directory."""


def claim(run_dir: Path, principal: str, token_id: str | None) -> None:
    (run_dir / "launcher.pid").write_text(f"{os.getpid()}\n")
    if token_id is not None:
        (run_dir / "token.json").write_text(json.dumps(
            {"principal": principal, "token_id": token_id}) + "\n")


def write_config(path: Path, hub: str, token: str, binding: str,
                 ca_file: str | None = None) -> None:
    """The agent's connection config (SPEC Appendix A), 0600, temp-and-replace."""
    config = {"version": 1, "hub": hub, "token": token, "binding": binding}
    if ca_file:
        config["ca_file"] = ca_file
    write_file_atomic(path, json.dumps(config).encode() + b"\n")


def stale(root: Path) -> list[tuple[Path, dict[str, str] | None]]:
    """Run directories under `root` whose launcher is gone, each with its token record."""
    found: list[tuple[Path, dict[str, str] | None]] = []
    for run_dir in sorted(root.iterdir()) if root.is_dir() else []:
        try:
            pid = int((run_dir / "launcher.pid").read_text())
        except (OSError, ValueError):
            pid = 0
        if pid > 0 and _alive(pid):
            continue
        try:
            token = json.loads((run_dir / "token.json").read_text())
        except (OSError, ValueError):
            token = None
        found.append((run_dir, token if isinstance(token, dict) else None))
    return found


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
