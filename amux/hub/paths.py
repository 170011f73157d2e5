"""Where a Hub keeps its run-time files under AMUX_HOME (light: the CLI imports it)."""

from __future__ import annotations

import os
from pathlib import Path

_SUN_PATH_MAX = 107


def owner_socket_path(home: Path) -> Path:
    """`<home>/run/hub.sock`, or a short per-user path when that is too long to bind.

    The fallback is `<temp>/amux-<uid>/<digest of home>.sock`, where `<temp>` is the
    first of `$TMPDIR`, `$TEMP`, `$TMP` that is a directory, else `/tmp`, with its
    symlinks resolved (macOS's `/var/folders/…` runs through the `/var` link; the Hub
    refuses a socket path with a symlink on it, `amux.sockdir`). Not
    `tempfile.gettempdir()`: it probes by writing files and may fall back to the
    current directory, so the Hub and a client could disagree, or the socket land
    in a directory someone else controls.
    """
    preferred = home / "run" / "hub.sock"
    if len(os.fsencode(preferred)) <= _SUN_PATH_MAX:
        return preferred
    import hashlib  # rarely needed, and OpenSSL's loading costs every launch ~4 ms

    digest = hashlib.sha256(os.fsencode(home.resolve())).hexdigest()[:16]
    return Path(_temp_root()) / f"amux-{os.geteuid()}" / f"{digest}.sock"


def _temp_root() -> str:
    for name in ("TMPDIR", "TEMP", "TMP"):
        candidate = os.environ.get(name, "")
        if os.path.isabs(candidate) and os.path.isdir(candidate):
            return os.path.realpath(candidate)
    return os.path.realpath("/tmp")


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
