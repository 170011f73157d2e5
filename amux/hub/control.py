"""`amux hub start|stop|status|reload`, and starting the local Hub on demand.

Only the installed `amux`, and only for the local default connection, starts a
Hub. Racing starters serialize on an `flock` of `<AMUX_HOME>/run/start.lock`:
the first starts the Hub and waits for its readiness line (or its start-up error,
as JSON), the others then find it answering. The Hub detaches itself from the
starter (`amux.daemon`), so it is never the zombie child of a
long-lived starter such as `amux run`, and `stop` sees it gone once it exited.
The Hub itself also refuses a second instance on the same memory root (its
exclusive root lock), so even a starter that bypasses this module cannot produce
two writers.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import sys
import time
from pathlib import Path

from amux.client.connection import Connection, owner_config_path, read_config
from amux.client.transport import HubClient
from amux.errors import AmuxError, HubUnreachable, InternalError, from_wire
from amux.faults import storage_faults
from amux.hub.paths import STOP_SECONDS, log_path, owner_socket_path, pid_path, start_lock_path

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from amux.pidfile import ProcessId

KILL_SECONDS = 5.0
"""How long `stop` waits for a Hub it had to SIGKILL."""


def _owner_connection(home: Path) -> Connection | None:
    path = owner_config_path(home)
    if not os.path.exists(path):
        return None
    return read_config(path, "local default", None)


def status(home: Path) -> dict[str, Any]:
    """The running Hub's status, or `{"running": false}` when none answers (with `log`,
    `run/hub.log`, when a Hub started in the background has written one: why it stopped
    or did not start is there)."""
    connection = _owner_connection(home)
    stopped: dict[str, Any] = {"running": False}
    if os.path.exists(log_path(home)):
        stopped["log"] = str(log_path(home))
    if connection is None:
        return stopped
    try:
        with HubClient(connection, timeout=5.0) as client:
            answer: dict[str, Any] = client.call("/v1/status", {})
            return answer
    except AmuxError as error:
        if error.code == "hub_unreachable" and "peer_uid" not in error.details:
            return stopped
        raise  # an impostor on the owner socket is not "not running": say so


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
    lock = start_lock_path(home)
    with storage_faults(home, "the Hub cannot start"):  # full or read-only: exit 8
        home.mkdir(mode=0o700, parents=True, exist_ok=True)
        lock.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        with open(lock, "a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            if answering(home):
                return status(home)
            return _spawn(home)


def _spawn(home: Path) -> dict[str, Any]:
    """Run the Hub detached (`amux.daemon`) and wait for its readiness line."""
    from amux import daemon

    # -P: the starter's working directory (a cloned repository, /tmp) is not put on the
    # Hub's import path, so nothing there runs as the Hub
    ready = daemon.start([sys.executable, "-P", "-m", "amux.hub.server", str(home)],
                         log_path(home))
    if "running" in ready:
        return ready
    error: dict[str, Any] | None = ready.get("error")
    if error is None:  # it died before it could say why: a bug, its traceback is in the log
        raise InternalError(f"the Hub did not start; see {log_path(home)}: "
                            f"{daemon.tail(log_path(home))}")
    code, message = error.pop("code"), error.pop("message")
    raise from_wire(code, f"the Hub did not start: {message}", error)


def stop(home: Path) -> dict[str, Any]:
    """Stop the Hub (SIGTERM: it drains, then exits) and wait until it is really gone.

    The pid comes from the Hub itself or, when it no longer answers (it is already
    draining, or hangs), from `run/hub.pid` if that names the same process (pid and
    start time). A Hub still there after `STOP_SECONDS` is killed: a stop never
    leaves a Hub that stopped serving but still holds its memory root.
    """
    from amux import pidfile

    current = status(home)
    if current.get("running"):
        hub = pidfile.identify(int(current["pid"]))
    else:
        recorded = pidfile.read(pid_path(home))
        alive = recorded is not None and recorded.started is not None and pidfile.alive(recorded)
        hub = recorded if alive else None
    if hub is None:
        return {"running": False, "stopped": current.get("running", False) is True}
    stopped = {"running": False, "stopped": True, "pid": hub.pid}
    if _signal_and_wait(hub, signal.SIGTERM, STOP_SECONDS):
        return stopped
    if _signal_and_wait(hub, signal.SIGKILL, KILL_SECONDS):
        return {**stopped, "killed": True}
    raise InternalError(f"the Hub (pid {hub.pid}) did not exit even after SIGKILL; "
                        "it is stuck in the kernel (check the disk holding AMUX_HOME)")


def _signal_and_wait(hub: ProcessId, signum: int, seconds: float) -> bool:
    """Send `signum` to the recorded Hub; True once it is gone (a zombie counts as gone)."""
    from amux import pidfile

    deadline = time.monotonic() + seconds
    if pidfile.alive(hub):
        with contextlib.suppress(ProcessLookupError):
            os.kill(hub.pid, signum)
    while pidfile.alive(hub):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def reload(home: Path) -> Any:
    """Ask the running Hub to re-read config.toml (same as SIGHUP)."""
    connection = _owner_connection(home)
    if connection is None:
        raise HubUnreachable(f"no Hub has run under {home} yet")
    with HubClient(connection) as client:
        return client.call("/v1/admin/reload", {})
