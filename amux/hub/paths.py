"""Where a Hub keeps its run-time files under AMUX_HOME (light: the CLI imports it)."""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

_SUN_PATH_MAX = 107


def owner_socket_path(home: Path) -> Path:
    """`<home>/run/hub.sock`, or a short per-user path when that is too long to bind."""
    preferred = home / "run" / "hub.sock"
    if len(os.fsencode(preferred)) <= _SUN_PATH_MAX:
        return preferred
    digest = hashlib.sha256(os.fsencode(home.resolve())).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / f"amux-{os.getuid()}" / f"{digest}.sock"


def pid_path(home: Path) -> Path:
    return home / "run" / "hub.pid"


def log_path(home: Path) -> Path:
    return home / "run" / "hub.log"


def start_lock_path(home: Path) -> Path:
    return home / "run" / "start.lock"


DRAIN_SECONDS = 10.0
"""How long a stopping Hub waits for requests in progress and unread answers before it
closes their connections (`amux.hub.loop`)."""
STOP_SECONDS = DRAIN_SECONDS + 10.0
"""How long `amux hub stop` waits for the Hub to exit: the drain plus a margin for a
write that was already running and the final clean-up."""
