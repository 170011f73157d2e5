"""What the scripted agents of the launcher and isolation tests leave behind."""

from __future__ import annotations

import time
from pathlib import Path


def wait_for_pid(log: Path, timeout: float = 30) -> int:
    """The pid a scripted agent writes to `<log>.pid` once it is running and waiting."""
    pid_file = Path(str(log) + ".pid")
    deadline = time.monotonic() + timeout
    while not pid_file.exists() or not pid_file.read_text():
        assert time.monotonic() < deadline, "the agent never started"
        time.sleep(0.05)
    return int(pid_file.read_text())
