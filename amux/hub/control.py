"""`amux hub start|stop|status|reload`, and starting the local Hub on demand.

Only the installed `amux`, and only for the local default connection, starts a
Hub. Racing starters serialize on an `flock` of `<AMUX_HOME>/run/start.lock`:
the first starts the Hub and waits for its readiness line, the others then find
it answering. The Hub itself also refuses a second instance on the same memory
root (its exclusive root lock), so even a starter that bypasses this module
cannot produce two writers.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from amux.client.connection import Connection, owner_config_path, read_config
from amux.client.transport import HubClient
from amux.client.wire import ClientError
from amux.hub.paths import log_path, owner_socket_path, start_lock_path

READY_TIMEOUT = 20.0


def _owner_connection(home: Path) -> Connection | None:
    path = owner_config_path(home)
    if not os.path.exists(path):
        return None
    return read_config(path, "local default", None)


def status(home: Path) -> dict[str, Any]:
    """The running Hub's status, or `{"running": false}` when none answers."""
    connection = _owner_connection(home)
    if connection is None:
        return {"running": False}
    try:
        with HubClient(connection, timeout=5.0) as client:
            answer: dict[str, Any] = client.call("/v1/status", {})
            return answer
    except ClientError as error:
        if error.code == "hub_unreachable":
            return {"running": False}
        raise


def answering(home: Path) -> bool:
    """Cheap liveness check: does the owner socket accept a connection?"""
    import socket

    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        probe.settimeout(2.0)
        try:
            probe.connect(str(owner_socket_path(home)))
        except OSError:
            return False
    return True


def start(home: Path) -> dict[str, Any]:
    """Start the Hub for `home` in the background unless one answers; its status."""
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    lock = start_lock_path(home)
    lock.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    with open(lock, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        if answering(home):
            return status(home)
        with open(log_path(home), "ab") as log:
            process = subprocess.Popen(
                [sys.executable, "-m", "amux.hub.server", str(home)],
                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=log,
                start_new_session=True, close_fds=True,
            )
        assert process.stdout is not None
        ready = _readiness(process)
        process.stdout.close()
        if ready is None:
            code = process.wait(timeout=READY_TIMEOUT)
            raise ClientError("internal", f"the Hub did not start (exit {code}); see "
                              f"{log_path(home)}: {_tail(log_path(home))}")
        # It outlives us as a daemon; a long-lived caller reaps it in `stop` (the
        # returncode set here keeps Popen from warning that it is still running).
        process.returncode = 0
        return ready


def _readiness(process: subprocess.Popen[bytes]) -> dict[str, Any] | None:
    """The Hub's first stdout line (its status once it serves), or None if it died."""
    assert process.stdout is not None
    line = process.stdout.readline()
    if not line:
        return None
    value: dict[str, Any] = json.loads(line)
    return value


def _tail(path: Path) -> str:
    try:
        lines = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return ""
    return lines[-1] if lines else ""


def stop(home: Path) -> dict[str, Any]:
    """Stop the running Hub (SIGTERM; it finishes in-flight requests) and wait for it."""
    current = status(home)
    if not current.get("running"):
        return {"running": False, "stopped": False}
    pid = int(current["pid"])
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + READY_TIMEOUT
    while time.monotonic() < deadline:
        with contextlib.suppress(ChildProcessError):  # our own child (started by us): reap it
            os.waitpid(pid, os.WNOHANG)
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return {"running": False, "stopped": True, "pid": pid}
        time.sleep(0.05)
    raise ClientError("internal", f"the Hub (pid {pid}) did not stop within {READY_TIMEOUT:.0f} s")


def reload(home: Path) -> Any:
    """Ask the running Hub to re-read config.toml (same as SIGHUP)."""
    connection = _owner_connection(home)
    if connection is None:
        raise ClientError("hub_unreachable", f"no Hub has run under {home} yet")
    with HubClient(connection) as client:
        return client.call("/v1/admin/reload", {})
