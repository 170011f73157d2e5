"""A process that acts as the target user for root: every read and write of an isolated
run in the target's home, or of any file the target could have planted.

The target owns its home and can change it under root's feet (a link, a `..` name, a
FIFO, a rename at the right moment). Whatever root opens, creates or chowns there by path
can be turned against root, so root does none of it: as OpenSSH's privilege separation
and sudo do, the launcher forks a child that drops to the target's uid, gid and groups
for good (`setgroups`, `setgid`, `setuid`; a check that root cannot be regained), and asks
it to do the work, one named operation at a time. What the child can do is what the
target could do anyway.

The child is forked before the launcher starts any thread, imports nothing afterwards
(an import would read files as the target, who may be unable to read the installation:
any attempt is an error), starts its own session (no terminal signal reaches it), keeps
no descriptor of the launcher's but its end of a socket pair, and ends when that closes.
It is non-dumpable (`PR_SET_DUMPABLE` 0, which the kernel also sets on the uid change
unless `fs.suid_dumpable` says otherwise): the target can signal it, but not trace it or
read its memory or its environment, which are the launcher's; a killed helper only fails
the target's own launch.

The socket protocol: length-prefixed ASCII JSON frames, a request `{"op", "args"}` and a reply
`{"ok"}` (a JSON value), `{"bytes"}` (base64) or `{"error"}`. Each call, the request
sent and the reply read, has one deadline (a stopped child reads no request larger than
the socket's buffer, so the send is bounded too), after which the child is killed and
every later call fails. Errors come back as their
own kind: `OSError` (errno, message, file name), `ValueError`, `AmuxError`; anything
else is a bug of the operation, reported as `internal`.
"""

from __future__ import annotations

import base64
import contextlib
import gc
import json
import os
import select
import signal
import socket
import struct
import sys
import time
from collections.abc import Callable, Mapping
from typing import Any

from amux.errors import AmuxError, InternalError, InvalidArgument, from_wire
from amux.materializer.target import Target

CALL_SECONDS = 30.0
"""The longest one call may take, its request sent and its reply read (listing or
mirroring a large home included)."""
REPLY_LIMIT = 64 << 20
"""The largest reply the launcher reads from the child."""
_HEADER = struct.Struct(">I")

Operation = Callable[..., Any]


class Helper:
    """A child process running as `target`, serving `operations` (name → function of
    JSON values returning a JSON value, or bytes)."""

    def __init__(self, target: Target, operations: Mapping[str, Operation]) -> None:
        if os.geteuid() != 0:
            raise InvalidArgument(f"--as-user {target.name}: only root can "
                                  "run an agent as another user; run amux run with sudo")
        self.target = target
        undumpable = _undumpable()  # loaded now: the child imports nothing
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child; measured through its answers
            ours.close()
            _child(target, operations, theirs, undumpable)
        theirs.close()
        self._sock: socket.socket | None = ours
        self._pid: int | None = pid
        self._gone: str | None = None

    def call(self, op: str, *args: Any, timeout: float = CALL_SECONDS) -> Any:
        """`op(*args)` as the target; its result, or its error raised here."""
        if self._gone is not None or self._sock is None:
            raise OSError(f"cannot act as {self.target.name}: {self._gone or 'closed'}")
        deadline = time.monotonic() + timeout
        try:
            _send(self._sock, {"op": op, "args": list(args)}, deadline)
            reply = _receive(self._sock, deadline, REPLY_LIMIT)
        except TimeoutError:
            self._fail(f"{op} took longer than {timeout:.0f} s, so it was stopped")
            raise OSError(f"acting as {self.target.name}: {self._gone}") from None
        except (OSError, ValueError) as exc:
            self._fail(f"the helper process ended ({exc})")
            raise OSError(f"acting as {self.target.name}: {self._gone}") from None
        except BaseException:  # interrupted mid-call: its reply would answer the next one
            self._fail(f"{op} was interrupted")
            raise
        if "error" in reply:
            raise _error(reply["error"])
        return _answer(reply)

    def close(self) -> None:
        """End the child (at once: it holds nothing that needs saving) and reap it."""
        if self._sock is not None:
            self._sock.close()
            self._sock = None
        if self._pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self._pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(self._pid, 0)
            self._pid = None

    def _fail(self, why: str) -> None:
        self._gone = why
        self.close()


def _undumpable() -> Callable[[], bool]:
    """What makes the calling process non-dumpable; it says whether that worked."""
    import ctypes

    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):  # no libc to ask: the kernel's uid-change rule
        return lambda: True
    set_dumpable, get_dumpable = 4, 3  # PR_SET_DUMPABLE, PR_GET_DUMPABLE
    return lambda: prctl(set_dumpable, 0, 0, 0, 0) == 0 and prctl(get_dumpable, 0, 0, 0, 0) == 0


def _child(target: Target, operations: Mapping[str, Operation], sock: socket.socket,
           undumpable: Callable[[], bool]) -> None:  # pragma: no cover - the forked child
    code = 70
    try:
        gc.freeze()  # what it holds of ours is never finalized here (closing reused fds)
        os.setsid()
        keep = sock.fileno()
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        os.closerange(3, keep)
        os.closerange(keep + 1, _max_fd())
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT,
                    signal.SIGPIPE):
            signal.signal(sig, signal.SIG_DFL)
        os.setgroups(list(target.groups))
        os.setgid(target.gid)
        os.setuid(target.uid)
        if (os.getuid() != target.uid or os.geteuid() != target.uid or _can_regain_root()
                or not undumpable()):
            return
        os.umask(0o077)
        os.chdir("/")
        sys.meta_path.insert(0, _NoImports())
        code = 0
        _serve(sock, operations)
    finally:
        os._exit(code)


def _can_regain_root() -> bool:  # pragma: no cover - runs in the forked child
    try:
        os.setuid(0)
    except PermissionError:
        return False
    return True


def _serve(sock: socket.socket, operations: Mapping[str, Operation]
           ) -> None:  # pragma: no cover - runs in the forked child
    while True:
        try:
            request = _receive(sock, None, None)
        except (OSError, ValueError):
            return  # the launcher is gone, or closed its end
        try:
            reply = _reply(operations[request["op"]](*request["args"]))
        except AmuxError as exc:
            reply = {"error": {"kind": "client", "code": exc.code, "message": exc.message,
                               "details": exc.details}}
        except OSError as exc:
            reply = {"error": {"kind": "os", "errno": exc.errno,
                               "message": exc.strerror or str(exc),
                               "filename": None if exc.filename is None else str(exc.filename)}}
        except ValueError as exc:
            reply = {"error": {"kind": "value", "message": str(exc)}}
        except Exception as exc:  # a bug of the operation: said, not hidden
            reply = {"error": {"kind": "internal", "message": f"{type(exc).__name__}: {exc}"}}
        try:
            _send(sock, reply)
        except (TypeError, ValueError) as exc:  # not JSON: a bug of the operation, said
            _send(sock, {"error": {"kind": "internal", "message": f"its answer: {exc}"}})


class _NoImports:
    """Refuses every import in the child (see the module docstring)."""

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> None:
        raise ImportError(f"the helper acting as the target user imports nothing "
                          f"({fullname}); import it before the helper starts")


def _max_fd() -> int:
    try:
        return os.sysconf("SC_OPEN_MAX")
    except (OSError, ValueError):
        return 1024


def _send(sock: socket.socket, message: Mapping[str, Any], deadline: float | None = None,
          ) -> None:
    """ASCII JSON: a file name that is not UTF-8 (a lone surrogate) crosses intact.
    Sent whole by `deadline` (TimeoutError after it; it bounds the whole `sendall`), or
    blocking without one."""
    data = json.dumps(message).encode("ascii")
    if deadline is not None:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError
        sock.settimeout(remaining)
    sock.sendall(_HEADER.pack(len(data)) + data)


def _receive(sock: socket.socket, deadline: float | None, limit: int | None) -> Any:
    (size,) = _HEADER.unpack(_exactly(sock, _HEADER.size, deadline))
    if limit is not None and size > limit:
        raise ValueError(f"a reply of {size} bytes, more than {limit}")
    return json.loads(_exactly(sock, size, deadline))


def _exactly(sock: socket.socket, size: int, deadline: float | None) -> bytes:
    chunks, left = [], size
    while left:
        if deadline is not None:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([sock], [], [], remaining)[0]:
                raise TimeoutError
        chunk = sock.recv(min(left, 1 << 20))
        if not chunk:
            raise OSError("end of stream")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _reply(result: Any) -> dict[str, Any]:
    """An operation's result as a reply: a JSON value, or bytes (a file's contents)."""
    if isinstance(result, bytes):
        return {"bytes": base64.b64encode(result).decode("ascii")}
    return {"ok": result}


def _answer(reply: Mapping[str, Any]) -> Any:
    if "bytes" in reply:
        return base64.b64decode(reply["bytes"])
    return reply.get("ok")


def _error(error: Mapping[str, Any]) -> Exception:
    kind, message = error.get("kind"), str(error.get("message"))
    if kind == "os":
        number = error.get("errno")
        if number is None:
            return OSError(message)
        return OSError(number, message, *([error["filename"]] if error.get("filename") else []))
    if kind == "value":
        return ValueError(message)
    if kind == "client":
        return from_wire(str(error.get("code")), message, error.get("details"))
    return InternalError(f"acting as the target user: {message}")
