"""The real `Probe` an adapter's hooks read the user's set-up through (files, short
commands), with the environment the agent will start from.

A command runs in its own session, as the agent would (the target user of an isolated
run, so nothing it writes in that user's home is owned by us), and is killed with
everything it started if it outlives its timeout.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import IO

from amux.launcher.supervise import RunAs

EXIT_GRACE_SECONDS = 2.0
"""How long a command that has answered (`until`) may take to exit once its stdin closes."""


class SystemProbe:
    """Reads this machine's files and runs short commands for an adapter's hooks."""

    def __init__(self, env: Mapping[str, str], cwd: str, *, executable: str | None = None,
                 run_as: RunAs | None = None) -> None:
        self._env = dict(env)
        self._cwd = cwd
        self._executable = executable
        self._run_as = run_as
        self.warnings: list[str] = []

    @property
    def env(self) -> Mapping[str, str]:
        return self._env

    @property
    def cwd(self) -> str:
        return self._cwd

    @property
    def executable(self) -> str | None:
        return self._executable

    def read_text(self, path: str) -> str | None:
        try:
            with open(path, encoding="utf-8") as handle:
                return handle.read()
        except FileNotFoundError:
            return None

    def warn(self, message: str) -> None:
        self.warnings.append(message)

    def run(self, argv: Sequence[str], *, stdin: str = "", timeout: float,
            until: Callable[[str], bool] | None = None) -> tuple[int, str, str] | None:
        run_as = self._run_as
        try:
            process = subprocess.Popen(
                list(argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, env=self._env, cwd=self._cwd, start_new_session=True,
                user=None if run_as is None else run_as.uid,
                group=None if run_as is None else run_as.gid,
                extra_groups=None if run_as is None else list(run_as.groups))
        except OSError:
            return None
        assert process.stdin and process.stdout and process.stderr
        out: list[str] = []
        err: list[str] = []
        answered = threading.Event()
        readers = [threading.Thread(target=_lines, args=(process.stdout, out, until, answered),
                                    daemon=True),
                   threading.Thread(target=_lines, args=(process.stderr, err, None, None),
                                    daemon=True)]
        writer = threading.Thread(target=_feed, args=(process.stdin, stdin.encode(),
                                                      until is None), daemon=True)
        for thread in (*readers, writer):
            thread.start()
        try:
            if not answered.wait(timeout):  # no answer, nor end of output, in time
                _kill(process)
                return None
            writer.join(EXIT_GRACE_SECONDS)  # it has read what it answered
            if writer.is_alive():  # answered without reading all of it: it cannot end well
                _kill(process)
            _close(process.stdin)
            try:
                code = process.wait(EXIT_GRACE_SECONDS if until is not None else timeout)
            except subprocess.TimeoutExpired:
                _kill(process)
                code = process.returncode
            for reader in readers:
                reader.join(EXIT_GRACE_SECONDS)
            return code, "".join(out), "".join(err)
        finally:
            _close(process.stdin)
            for reader, stream in zip(readers, (process.stdout, process.stderr), strict=True):
                reader.join(EXIT_GRACE_SECONDS)
                if not reader.is_alive():  # else something that escaped still holds the pipe
                    _close(stream)


def _feed(stream: IO[bytes], data: bytes, close: bool) -> None:
    """Write `data` to the command's stdin (in a thread: it may read slowly or not at all)."""
    try:
        stream.write(data)
        stream.flush()
    except (OSError, ValueError):  # it exited without reading, or we closed it
        return
    if close:
        _close(stream)


def _lines(stream: IO[bytes], into: list[str], until: Callable[[str], bool] | None,
           answered: threading.Event | None) -> None:
    """Collect `stream` line by line; set `answered` at the line `until` accepts, or at
    end of output."""
    try:
        for raw in stream:
            line = raw.decode("utf-8", "replace")
            into.append(line)
            if answered is not None and until is not None and until(line):
                answered.set()
    except (OSError, ValueError):
        pass
    finally:
        if answered is not None:
            answered.set()


def _close(stream: IO[bytes]) -> None:
    with contextlib.suppress(OSError, ValueError):
        stream.close()


def _kill(process: subprocess.Popen[bytes]) -> None:
    """End the command and everything it started (its own session's process group)."""
    with contextlib.suppress(OSError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()
