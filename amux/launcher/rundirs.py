"""What every run directory records so a dead launcher's leftovers can be cleaned up.

A run directory (non-isolated: `<AMUX_HOME>/run/agents/<id>`; isolated: under the
runs root) holds `launcher.pid` and, when a delegated token was issued,
`token.json` with the principal and token id (no secret), whether the launcher's
principal delegated it to itself (`self`: only that principal may revoke it) and
when it expires. The next launch finds the directories whose launcher is gone,
revokes their tokens and removes them.
"Gone" is judged by pid *and* start time (`amux.hub.pidfile`): a reused pid or an
unreaped zombie does not keep a dead launcher's token alive.
"""

from __future__ import annotations

import json
from pathlib import Path

from amux.hub import pidfile
from amux.memory.durable import write_file_atomic

CONFIG_NAME = "memory.json"
"""The agent's connection config inside its run directory."""


def claim(run_dir: Path, principal: str, token_id: str | None, *, own: bool = False,
          expires_at: object = None) -> None:
    """Record this launcher (pid and start time) and the token to revoke once it is gone
    (`own`: delegated by `principal` to itself; else by the Hub's owner)."""
    (run_dir / "launcher.pid").write_text(pidfile.current().render())
    if token_id is not None:
        record: dict[str, object] = {"principal": principal, "token_id": token_id}
        if own:
            record.update({"self": True, "expires_at": expires_at})
        (run_dir / "token.json").write_text(json.dumps(record) + "\n")


def write_config(path: Path, hub: str, token: str, binding: str, ca_file: str | None = None,
                 *, hub_uid: int) -> None:
    """The agent's connection config (SPEC Appendix A), 0600, temp-and-replace.

    `hub_uid`, for a Unix socket, is the uid the agent's client requires of whoever
    listens there before it sends the token (`amux.client.connection`).
    """
    config: dict[str, str | int] = {"version": 1, "hub": hub, "token": token,
                                    "binding": binding}
    if hub.startswith("unix:"):
        config["hub_uid"] = hub_uid
    if ca_file:
        config["ca_file"] = ca_file
    write_file_atomic(path, json.dumps(config).encode() + b"\n")


def stale(root: Path) -> list[tuple[Path, dict[str, object] | None]]:
    """Run directories under `root` whose launcher is gone, each with its token record."""
    found: list[tuple[Path, dict[str, object] | None]] = []
    for run_dir in sorted(root.iterdir()) if root.is_dir() else []:
        launcher = pidfile.read(run_dir / "launcher.pid")
        if launcher is not None and pidfile.alive(launcher):
            continue
        try:
            token = json.loads((run_dir / "token.json").read_text())
        except (OSError, ValueError):
            token = None
        found.append((run_dir, token if isinstance(token, dict) else None))
    return found

