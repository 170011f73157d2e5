"""Drive `codex app-server` for a Runtime, with Codex's native memory off.

Public names (`__all__`):

- `CodexAppServer`: one `codex app-server` process and a sequential client for it;
  `start_thread` is the memory-safe way to start a thread, `request`, `notify`,
  `wait_for_notification` and `take_notifications` speak the rest of the protocol.
- `MEMORY_OFF_OVERRIDES`: the arguments that turn native memory off for that process.
- `CodexAppServerError` (the app-server cannot be driven as amux needs: not started,
  exited, silent, memory not confirmed off, a call this Codex lacks) and its subclass
  `CodexRequestError` (a request answered with a JSON-RPC error).
- `DEFAULT_TIMEOUT`: seconds each call waits unless told otherwise.

Usage (docs/runtimes.md has a complete example)::

    with CodexAppServer(["codex", "app-server", *MEMORY_OFF_OVERRIDES]) as server:
        thread_id = server.start_thread(instructions, cwd)  # theirs, then the protocol
        server.request("turn/start", {"threadId": thread_id, "input": [...]})
        done = server.wait_for_notification("turn/completed", timeout=300)

The app-server speaks one JSON object per line on stdio: requests carry an `id`,
responses carry the same `id` and no `jsonrpc` field, and notifications (or requests
from the server) are interleaved with them. Calls are sequential and each has a
bounded timeout, so a silent or dead app-server becomes an error naming the call and
the last lines of its stderr rather than a hang.

Codex's native memory is switched off for one app-server only, through its command
line (`MEMORY_OFF_OVERRIDES`, i.e. `-c features.memories=false -c
memories.use_memories=false -c memories.generate_memories=false`); the user's
config.toml is never written. `start_thread` then checks that `config/read`, as seen
from the thread's cwd (trusted project `.codex/config.toml` layers included),
reports all three settings false before it installs any instructions, and turns the
thread's own memory mode off after. The settings are the Codex adapter's
(`amux.adapters.codex`), so `amux run codex` and a Runtime suppress the same ones.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import re
import signal
import subprocess
import threading
import time
from collections import deque
from collections.abc import Mapping, Sequence
from typing import IO, Any, TypeAlias

from amux import __version__
from amux.adapters.codex import MEMORY_SETTINGS, SUPPRESSION

__all__ = [
    "DEFAULT_TIMEOUT",
    "MEMORY_OFF_OVERRIDES",
    "CodexAppServer",
    "CodexAppServerError",
    "CodexRequestError",
]

MEMORY_OFF_OVERRIDES = tuple(arg for setting in SUPPRESSION for arg in ("-c", setting))
"""Arguments for `codex app-server` that turn native memory off for that process only
(`-c KEY=false` for each of the adapter's `MEMORY_SETTINGS`). Without them `start_thread`
refuses whenever the user's own config leaves a setting on or unset."""

DEFAULT_TIMEOUT = 20.0
"""Seconds a call waits for its answer unless it is given its own timeout. Enough for
start-up and every call `start_thread` makes; a model turn needs its own, longer one."""
CLOSE_GRACE = 5.0
STDERR_LINES = 20
MAX_PENDING = 10_000  # notifications kept for the caller; the oldest are dropped beyond this
ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")

StrPath: TypeAlias = str | os.PathLike[str]


class CodexAppServerError(Exception):
    """The app-server could not be driven as amux needs: the message says why.

    Raised when it cannot start, exits or closes its output, stays silent past a call's
    timeout, writes a line that is not a JSON object, has been closed, lacks a call
    amux needs (the message names the call and says to upgrade Codex), or does not
    confirm that native memory is off. The messages carry the last lines of the
    app-server's stderr where they help.
    """


class CodexRequestError(CodexAppServerError):
    """The app-server answered a request with a JSON-RPC error: `method`, `code`, `message`.

    A caller can tell a refused request (bad parameters, an unreadable config) from a
    call this Codex does not have with `missing_method`.
    """

    def __init__(self, method: str, code: int | None, message: str) -> None:
        super().__init__(f"codex app-server refused {method} ({code}): {message}")
        self.method = method
        self.code = code
        self.message = message

    @property
    def missing_method(self) -> bool:
        """Whether this Codex does not know the method at all (as opposed to refusing it).

        Codex 0.171.0 reports an unknown method as -32600 "unknown variant `<method>`";
        -32601 is the standard JSON-RPC code for the same thing.
        """
        return self.code == -32601 or f"unknown variant `{self.method}`" in self.message


class CodexAppServer:
    """One `codex app-server` process and a sequential client for it (not thread-safe).

    `argv` is the whole command, normally `[codex, "app-server", *MEMORY_OFF_OVERRIDES]`
    plus any `-c` overrides of the Runtime's own (an MCP server entry, say); `env`
    (None: this process's environment) and `cwd` are the process's, not a thread's.
    `timeout` is the default for every call (`DEFAULT_TIMEOUT`).

    Starting it performs `initialize` (with the experimental API, which
    `thread/memoryMode/set` needs) and the `initialized` notification; if that fails
    the process is closed before the error is raised. `version` is Codex's version
    from the `initialize` userAgent ("unknown" if it has none). Use it as a context
    manager, or call `close`: the process runs in its own session and `close` reaps it.

    Every notification, and every request the server sends, that arrives while a call
    waits is kept (the newest 10,000) for `wait_for_notification` and
    `take_notifications`. The driver sends no answers to server requests, so a Runtime
    configures Codex so that none are needed (e.g. MCP tools approved up front).
    """

    def __init__(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: StrPath | None = None,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> None:
        self._timeout = timeout
        self._next_id = 0
        self._closed = False
        self._pending: deque[dict[str, Any]] = deque(maxlen=MAX_PENDING)
        self._lines: queue.Queue[bytes | None] = queue.Queue()
        self._stderr: deque[str] = deque(maxlen=STDERR_LINES)
        self.version = "unknown"
        try:
            # Own session: close() can signal the wrapper and the native binary together.
            self._process = subprocess.Popen(
                list(argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, env=None if env is None else dict(env), cwd=cwd,
                start_new_session=True,
            )
        except OSError as error:
            raise CodexAppServerError(
                f"cannot start codex app-server ({argv[0]}): {error}"
            ) from error
        assert self._process.stdout is not None and self._process.stderr is not None
        self._readers = [
            threading.Thread(target=self._read_stdout, args=(self._process.stdout,), daemon=True),
            threading.Thread(target=self._read_stderr, args=(self._process.stderr,), daemon=True),
        ]
        for reader in self._readers:
            reader.start()
        try:
            result = self._required(
                "initialize",
                {
                    "clientInfo": {"name": "amux", "title": "amux memory",
                                   "version": __version__},
                    "capabilities": {"experimentalApi": True},
                },
                "start a session",
            )
            self.version = _version_of(result)
            self.notify("initialized")
        except BaseException:
            self.close()
            raise

    def __enter__(self) -> CodexAppServer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def pid(self) -> int:
        """The app-server's process id (also its process group id)."""
        return self._process.pid

    def memory_settings(self, cwd: StrPath) -> dict[str, Any]:
        """The three memory settings as `config/read` reports them from `cwd` (None: unset).

        The cwd matters: without it Codex leaves out the project config layers that
        apply to a thread started there.
        """
        result = self._required("config/read", {"includeLayers": False, "cwd": os.fspath(cwd)},
                                "confirm that native memory is off")
        config = result.get("config")
        settings: dict[str, Any] = {}
        for key in MEMORY_SETTINGS:
            value: Any = config
            for part in key.split("."):
                value = value.get(part) if isinstance(value, dict) else None
            settings[key] = value
        return settings

    def start_thread(
        self, developer_instructions: str, cwd: StrPath, extra: Mapping[str, Any] | None = None
    ) -> str:
        """Start a thread with native memory off and the merged instructions; its id.

        Refuses before `thread/start` unless `config/read` shows all three memory
        settings false, and sets the thread's memory mode `disabled` after it.
        `developer_instructions` replaces the `developer_instructions` of the user's
        config for this thread, so pass the merged text (theirs first, then the
        protocol), as `amux run codex` does. `extra` adds `thread/start` parameters; a
        per-thread `config` is refused because it could undo what `config/read` confirmed.
        """
        params = dict(extra or {})
        clashes = sorted({"developerInstructions", "cwd", "config"} & params.keys())
        if clashes:
            raise ValueError(f"start_thread sets or forbids these itself: {', '.join(clashes)}")
        settings = self.memory_settings(cwd)
        not_off = [f"{key} is {json.dumps(value)}" for key, value in settings.items()
                   if value is not False]
        if not_off:
            flags = " ".join(f"-c {key}=false" for key in MEMORY_SETTINGS)
            raise CodexAppServerError(
                f"codex app-server (version {self.version}) did not confirm that native memory"
                f" is off for {os.fspath(cwd)}: {', '.join(not_off)} (each must be false);"
                f" start it with {flags}"
            )
        started = self._required(
            "thread/start",
            {**params, "developerInstructions": developer_instructions, "cwd": os.fspath(cwd)},
            "start a thread with the memory protocol",
        )
        thread = started.get("thread")
        thread_id = thread.get("id") if isinstance(thread, dict) else None
        if not isinstance(thread_id, str):
            raise CodexAppServerError(f"thread/start answered without a thread id: {started}")
        self._required("thread/memoryMode/set", {"threadId": thread_id, "mode": "disabled"},
                       "keep native memory off")
        return thread_id

    def request(
        self, method: str, params: Mapping[str, Any] | None = None, timeout: float | None = None
    ) -> dict[str, Any]:
        """Send one request and wait for its result, collecting what arrives meanwhile.

        Codex requires `params` on every request, so None sends `{}`.
        """
        self._next_id += 1
        request_id = self._next_id
        self._send({"id": request_id, "method": method, "params": dict(params or {})}, method)
        seconds = self._timeout if timeout is None else timeout
        deadline = time.monotonic() + seconds
        while True:
            message = self._receive(deadline, seconds, f"answer {method}")
            if "method" in message:
                self._pending.append(message)
            elif message.get("id") == request_id:
                if "error" in message:
                    error = message["error"] if isinstance(message["error"], dict) else {}
                    raise CodexRequestError(method, error.get("code"),
                                            str(error.get("message", message["error"])))
                result = message.get("result")
                if not isinstance(result, dict):
                    raise CodexAppServerError(f"{method} answered with a non-object: {result!r}")
                return result
            # Any other response is the late answer to a call that timed out: dropped.

    def notify(self, method: str, params: Mapping[str, Any] | None = None) -> None:
        """Send a notification (no answer expected)."""
        message: dict[str, Any] = {"method": method}
        if params is not None:
            message["params"] = dict(params)
        self._send(message, method)

    def wait_for_notification(self, method: str, timeout: float | None = None) -> dict[str, Any]:
        """The first collected or arriving notification named `method`, removed from the rest."""
        for message in self._pending:
            if message["method"] == method:
                self._pending.remove(message)
                return message
        seconds = self._timeout if timeout is None else timeout
        deadline = time.monotonic() + seconds
        while True:
            message = self._receive(deadline, seconds, f"send a {method} notification")
            if message.get("method") == method:
                return message
            if "method" in message:
                self._pending.append(message)

    def take_notifications(self) -> list[dict[str, Any]]:
        """The notifications and server requests collected so far, oldest first; clears them."""
        taken = list(self._pending)
        self._pending.clear()
        return taken

    def close(self) -> None:
        """Close stdin (the app-server exits on EOF), escalate if it lingers, and reap it."""
        if self._closed:
            return
        self._closed = True
        process = self._process
        assert process.stdin is not None
        with contextlib.suppress(OSError):  # it already exited and the pipe is broken
            process.stdin.close()
        try:
            process.wait(CLOSE_GRACE)
        except subprocess.TimeoutExpired:
            self._signal_group(signal.SIGTERM)
            try:
                process.wait(CLOSE_GRACE)
            except subprocess.TimeoutExpired:
                self._signal_group(signal.SIGKILL)
                process.wait()
        for reader in self._readers:
            reader.join(CLOSE_GRACE)

    def _signal_group(self, signum: int) -> None:
        with contextlib.suppress(ProcessLookupError):  # the whole group is gone already
            os.killpg(self._process.pid, signum)

    def _required(self, method: str, params: Mapping[str, Any], need: str) -> dict[str, Any]:
        """`request`, with an unknown method turned into a message that says what to do."""
        try:
            return self.request(method, params)
        except CodexRequestError as error:
            if not error.missing_method:
                raise
            raise CodexAppServerError(
                f"this Codex (version {self.version}) lacks {method}, which amux"
                f" needs to {need}; upgrade Codex"
            ) from error

    def _send(self, message: dict[str, Any], method: str) -> None:
        if self._closed:
            raise CodexAppServerError(f"cannot send {method}: the codex app-server was closed")
        assert self._process.stdin is not None
        try:
            self._process.stdin.write(json.dumps(message).encode() + b"\n")
            self._process.stdin.flush()
        except (BrokenPipeError, ValueError) as error:
            raise self._exited(f"before amux could send {method}") from error

    def _receive(self, deadline: float, seconds: float, awaited: str) -> dict[str, Any]:
        """The next message from stdout, or an error naming what was `awaited` and stderr."""
        try:
            line = self._lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            raise CodexAppServerError(
                f"codex app-server did not {awaited} within {seconds:g} s{self._stderr_tail()}"
            ) from None
        if line is None:
            self._lines.put(None)  # every later call sees the end too
            raise self._exited(f"before it could {awaited}")
        try:
            message = json.loads(line)
        except ValueError:
            message = None
        if not isinstance(message, dict):
            raise CodexAppServerError(
                f"codex app-server wrote a line that is not a JSON object (awaited: {awaited}):"
                f" {line[:200]!r}"
            )
        return message

    def _exited(self, when: str) -> CodexAppServerError:
        try:
            code: int | None = self._process.wait(CLOSE_GRACE)
        except subprocess.TimeoutExpired:
            code = None
        self._readers[1].join(CLOSE_GRACE)  # so the tail holds its last words
        status = "closed its output" if code is None else f"exited with code {code}"
        return CodexAppServerError(f"codex app-server {status} {when}{self._stderr_tail()}")

    def _stderr_tail(self) -> str:
        if not self._stderr:
            return " (no stderr output)"
        return "; last stderr lines:\n" + "\n".join(self._stderr)

    def _read_stdout(self, stream: IO[bytes]) -> None:
        with stream:
            for line in stream:
                self._lines.put(line)
        self._lines.put(None)

    def _read_stderr(self, stream: IO[bytes]) -> None:
        with stream:
            for line in stream:
                self._stderr.append(ANSI_ESCAPE.sub("", line.decode(errors="replace")).rstrip())


def _version_of(initialize_result: Mapping[str, Any]) -> str:
    """Codex's version from a userAgent such as "amux/0.171.0 (Debian 12.0.0; x86_64) …"."""
    user_agent = initialize_result.get("userAgent")
    if isinstance(user_agent, str) and "/" in user_agent.split(" ", 1)[0]:
        return user_agent.split(" ", 1)[0].split("/", 1)[1]
    return "unknown"
