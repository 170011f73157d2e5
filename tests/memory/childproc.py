"""Parent side of `store_child.py`: spawn it, read its acknowledgements, SIGKILL it."""

from __future__ import annotations

import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

CHILD_SCRIPT = Path(__file__).with_name("store_child.py")
STARTUP_TIMEOUT = 30.0


class Child:
    """One `store_child.py` process; its stdout lines are collected by a reader thread."""

    def __init__(self, *args: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(CHILD_SCRIPT), *args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: list[str] = []
        self._events: queue.Queue[str | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self.stderr = ""

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if not line.endswith("\n"):
                break  # never happens for lines < PIPE_BUF, but never trust a torn line
            self.lines.append(line[:-1])
            self._events.put(line[:-1])
        self._events.put(None)

    def expect(self, prefix: str, timeout: float = STARTUP_TIMEOUT) -> str:
        """Wait for the next line starting with `prefix` (acks in between are skipped)."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self._events.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                self.kill(check=False)
                raise AssertionError(
                    f"child said nothing like {prefix!r} within {timeout}s; stderr:\n{self.stderr}"
                ) from None
            if line is None:
                self.kill(check=False)
                raise AssertionError(
                    f"child exited ({self.proc.returncode}) before {prefix!r}; "
                    f"stderr:\n{self.stderr}"
                )
            if line.startswith(prefix):
                return line

    def kill(self, *, check: bool = True) -> None:
        """SIGKILL the child, reap it and drain its pipes; with `check`, it must have been alive."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        self._reader.join()
        assert self.proc.stderr is not None
        if not self.proc.stderr.closed:
            self.stderr = self.proc.stderr.read()
            self.proc.stderr.close()
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        if check:
            assert self.proc.returncode == -signal.SIGKILL, (
                f"child exited by itself with {self.proc.returncode} before it was killed; "
                f"stderr:\n{self.stderr}"
            )


@contextmanager
def spawned(*args: str) -> Iterator[Child]:
    """A child that is killed and reaped however the block ends."""
    child = Child(*args)
    try:
        yield child
    finally:
        child.kill(check=False)
