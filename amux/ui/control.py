"""`amux ui`: start the page (or reuse the running one), say where it is, stop it.

One page per user and AMUX_HOME: `<AMUX_HOME>/run/ui.json` (0600, the user's own
directory) records its pid with its start time, its port and its key; another user
cannot read it. Starters serialize on an `flock` of `run/ui.lock`. The page serves
until `amux ui stop` (or SIGTERM), and removes its record as it exits.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import signal
import socket
import stat
import sys
import threading
import time
from pathlib import Path
from typing import Any

from amux import daemon, pidfile
from amux.durable import write_file_atomic
from amux.errors import AmuxError, Forbidden, InternalError, InvalidArgument, from_wire

STOP_SECONDS = 10.0


def record_path(home: Path) -> Path:
    return home / "run" / "ui.json"


def forward_path(home: Path) -> Path:
    """The 0600 file a browser is opened on: it forwards to the address (`amux ui`)."""
    return home / "run" / "ui-open.html"


def log_path(home: Path) -> Path:
    return home / "run" / "ui.log"


def url(record: dict[str, Any]) -> str:
    """The page's address, its key in the fragment (never sent in a request)."""
    return f"http://127.0.0.1:{record['port']}/#key={record['key']}"


def running(home: Path) -> dict[str, Any] | None:
    """The record of this user's page when it runs and answers on its port, else None."""
    path = record_path(home)
    try:
        with open(path, "rb") as handle:
            info = os.fstat(handle.fileno())
            record: dict[str, Any] = json.loads(handle.read())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise InvalidArgument(f"cannot read {path}: {exc}; remove it and run `amux ui` "
                              "again") from None
    if info.st_uid != os.geteuid() or stat.S_IMODE(info.st_mode) & 0o077:
        raise Forbidden(f"{path} is not this user's private file: remove it and run "
                        "`amux ui` again")
    process = pidfile.ProcessId(int(record["pid"]), float(record["started"]))
    if not pidfile.alive(process) or not _answers(int(record["port"])):
        return None
    return record


def _answers(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(2.0)
        try:
            probe.connect(("127.0.0.1", port))
        except OSError:
            return False
    return True


def start(home: Path, port: int | None) -> dict[str, Any]:
    """This user's page, started unless it runs; `reused` says which."""
    (home / "run").mkdir(mode=0o700, parents=True, exist_ok=True)
    with open(home / "run" / "ui.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        record = running(home)
        if record is not None:
            if port is not None and port != record["port"]:
                raise InvalidArgument(f"the page already runs on port {record['port']}: "
                                      "`amux ui stop` first to move it")
            return record | {"reused": True}
        argv = [sys.executable, "-P", "-m", "amux.ui.control", str(home)]
        ready = daemon.start(argv + ([] if port is None else ["--port", str(port)]),
                             log_path(home))
    if "port" in ready:
        return ready | {"reused": False}
    error: dict[str, Any] | None = ready.get("error")
    if error is None:
        raise InternalError(f"the page did not start; see {log_path(home)}: "
                            f"{daemon.tail(log_path(home))}")
    code, message = error.pop("code"), error.pop("message")
    raise from_wire(code, f"the page did not start: {message}", error)


def stop(home: Path) -> dict[str, Any]:
    """Stop this user's page (SIGTERM) and wait until it is gone."""
    record = running(home)
    if record is None:
        with contextlib.suppress(FileNotFoundError):
            record_path(home).unlink()
        return {"running": False, "stopped": False}
    process = pidfile.ProcessId(int(record["pid"]), float(record["started"]))
    with contextlib.suppress(ProcessLookupError):
        os.kill(process.pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_SECONDS
    while pidfile.alive(process):
        if time.monotonic() > deadline:
            os.kill(process.pid, signal.SIGKILL)
            break
        time.sleep(0.05)
    return {"running": False, "stopped": True, "pid": process.pid}


def serve(home: Path, port: int | None, announce: Any = None) -> None:
    """Serve the page until SIGTERM or SIGINT, as this user, through this user's Hub
    connection; `announce(record)` once it answers."""
    from amux.client.connection import find_connection
    from amux.hub import control
    from amux.ui.page import Page
    from amux.ui.server import PageServer, new_key

    find_connection()  # no connection at all: say so now, not on the first request
    server = PageServer(Page(lambda: control.start(home)), new_key(), port or 0)
    me = pidfile.identify(os.getpid())
    assert me is not None  # this very process
    record = {"pid": os.getpid(), "started": me.started, "port": server.port,
              "key": server.key, "url": server.url}
    write_file_atomic(record_path(home), json.dumps(record).encode(), mode=0o600)

    def shut(signum: int, frame: object) -> None:
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, shut)
    signal.signal(signal.SIGINT, shut)
    try:
        if announce is not None:
            announce(record)
        server.serve_forever(poll_interval=0.2)
    finally:
        server.server_close()
        with contextlib.suppress(FileNotFoundError, OSError, ValueError):
            if json.loads(record_path(home).read_bytes()).get("pid") == os.getpid():
                record_path(home).unlink()
                forward_path(home).unlink()  # it holds the key too


def main(argv: list[str] | None = None) -> int:
    """`python -m amux.ui.control HOME [--port N] [--detach]`: what `amux ui` starts."""
    args = sys.argv[1:] if argv is None else argv
    detached = daemon.DETACH in args
    args = [arg for arg in args if arg != daemon.DETACH]
    home = Path(args[0])
    port = int(args[args.index("--port") + 1]) if "--port" in args else None
    if detached:
        daemon.detach()
    logging.basicConfig(level=logging.INFO, format="amux ui: %(message)s")

    def ready(record: dict[str, Any]) -> None:
        if detached:
            print(json.dumps(record), flush=True)
            os.dup2(os.open(os.devnull, os.O_WRONLY), 1)  # the starter's pipe, closed

    try:
        try:
            serve(home, port, ready)
        except OSError as error:  # the port is taken, say
            raise InvalidArgument(f"cannot serve on port {port}: {error.strerror}") from None
    except AmuxError as error:
        return daemon.failed("amux ui", error, detached)
    return 0


if __name__ == "__main__":
    sys.exit(main())
