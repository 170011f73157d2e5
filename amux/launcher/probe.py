"""The real `Probe` an adapter's hooks read the user's set-up through (files, short
commands), with the environment the agent will start from.

A command runs in its own session, as the agent would (the target user of an isolated
run, so nothing it writes in that user's home is owned by us), and is killed with
everything it started if it outlives its timeout.

The hooks' cache (`recall`, `remember`) is one small JSON file of the launcher's
(`<AMUX_HOME>/cache/probe.json`, 0600, temp-and-replace), even when the commands run as
another user: the most recent `CACHE_ENTRIES` answers, each under its hook's key and the
user the commands run as. A file that cannot be read or parsed is an empty cache; one that
cannot be written is no cache. The user's files are read (`read_text`, `list_dir`,
`stat_signature`, `realpath`) as the user the agent runs as, through `UserFiles`: for an
isolated run, by the helper acting as the target, never by root.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from amux.durable import write_file_atomic
from amux.envpatch import EnvPatch
from amux.launcher.supervise import RunAs
from amux.launcher.userfiles import UserFiles

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import IO

EXIT_GRACE_SECONDS = 2.0
"""How long a command that has answered (`until`) may take to exit once its stdin closes."""
CACHE_ENTRIES = 64


class SystemProbe:
    """Reads this machine's files and runs short commands for an adapter's hooks."""

    def __init__(self, env: Mapping[str, str], cwd: str, *, executable: str | None = None,
                 run_as: RunAs | None = None, cache: Path | None = None,
                 files: UserFiles | None = None) -> None:
        self._env = dict(env)
        self._files = files or UserFiles()
        self._cwd = cwd
        self._executable = executable
        self._run_as = run_as
        self._cache = cache
        self._entries: dict[str, str] | None = None
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
        return self._files.read_text(path)

    def realpath(self, path: str) -> str:
        return self._files.realpath(path)

    def list_dir(self, path: str) -> list[str] | None:
        return self._files.list_dir(path)

    def stat_signature(self, path: str) -> str | None:
        return self._files.stat_signature(path)

    def recall(self, key: str) -> str | None:
        if self._entries is None:
            self._entries = self._load()
        return self._entries.get(self._user_key(key))

    def remember(self, key: str, value: str) -> None:
        if self._cache is None:
            return
        entries = self._load()  # as it is now: another launch may have added to it
        entries.pop(self._user_key(key), None)
        entries[self._user_key(key)] = value
        kept = dict(list(entries.items())[-CACHE_ENTRIES:])
        with contextlib.suppress(OSError):
            self._cache.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            write_file_atomic(self._cache, json.dumps(kept, indent=0).encode() + b"\n")
            self._entries = kept

    def _user_key(self, key: str) -> str:
        """`key` for the user the commands run as (what they can read is theirs)."""
        return f"{os.geteuid() if self._run_as is None else self._run_as.uid}:{key}"

    def _load(self) -> dict[str, str]:
        if self._cache is None:
            return {}
        try:
            entries = json.loads(self._cache.read_bytes())
        except (OSError, ValueError):
            return {}
        if not isinstance(entries, dict):
            return {}
        return {k: v for k, v in entries.items() if isinstance(v, str)}

    def warn(self, message: str) -> None:
        self.warnings.append(message)

    def run(self, argv: Sequence[str], *, stdin: str = "", timeout: float,
            until: Callable[[str], bool] | None = None,
            env: EnvPatch | None = None,
            exit_grace: float | None = None) -> tuple[int, str, str] | None:
        run_as = self._run_as
        command_env = dict(self._env) if env is None else env.apply(self._env)
        grace = EXIT_GRACE_SECONDS if exit_grace is None else exit_grace
        try:
            process = subprocess.Popen(
                list(argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, env=command_env, cwd=self._cwd, start_new_session=True,
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
                code = process.wait(grace if until is not None else timeout)
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
