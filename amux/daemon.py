"""Background services started on demand (the Hub, the memory page): detached, ready
when they say so.

The starter runs `argv` with `DETACH` and waits for its intermediate process, which
forks the service and exits at once (`detach`): the service is reparented, in a session
of its own, and is no child of the command that started it, so when it exits nobody's
unreaped zombie keeps its pid alive. The service writes one readiness line of JSON to
the stdout it inherited (its status, or an error's wire JSON) and closes it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from amux.errors import AmuxError

DETACH = "--detach"
"""The service's flag: leave the starter before serving (`detach`)."""
READY_TIMEOUT = 20.0


def start(argv: list[str], log: Path) -> dict[str, Any]:
    """Run `argv + [DETACH]` detached, its stderr appended to `log`; its readiness line
    as JSON (`{}` when it exited without one: its traceback is in `log`)."""
    with open(log, "ab") as stderr:
        process = subprocess.Popen([*argv, DETACH], stdin=subprocess.DEVNULL,
                                   stdout=subprocess.PIPE, stderr=stderr, close_fds=True)
    process.wait(timeout=READY_TIMEOUT)  # the intermediate: the service is its child
    assert process.stdout is not None
    with process.stdout:
        line = process.stdout.readline()
    ready: dict[str, Any] = json.loads(line) if line else {}
    return ready


def failed(prog: str, error: AmuxError, detached: bool) -> int:
    """A service that could not start: its error's JSON as the readiness line (detached),
    one line on stderr, and the error's exit code."""
    if detached:
        print(json.dumps(error.to_wire()), flush=True)
    print(f"{prog}: {error.message}", file=sys.stderr)
    return error.exit_code


def detach() -> None:
    """Fork once more and let the intermediate exit at once (the starter reaps it).
    Runs before any thread exists (a fork copies only its caller)."""
    if os.fork() > 0:
        os._exit(0)
    os.setsid()


def tail(path: Path) -> str:
    """The last line of a service's log: why it did not start."""
    try:
        lines = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return ""
    return lines[-1] if lines else ""
