"""Searches in a process of their own, beside the Hub's (issue 25).

A search is pure-Python CPU work: a few milliseconds of scanning per query. Run on
the Hub's worker threads it holds the GIL the loop thread needs for every other
request, so a Hub busy searching answered `get` late (p99 715 ms at 400 sessions on
two cores) and threads scanning at once did half the work of one. Here a child
process scans, on another core, with its own cache; the Hub's thread waits on a
socket, holding no GIL, meanwhile.

The child is handed, with each request, the scope's directory as the descriptor the
Hub opened (SCM_RIGHTS over a socket pair): it walks exactly what the Hub's own
search would, with the same code (`amux.memory.search`), and opens no path of its
own. One socket and one reader serve requests in the order they were sent. The child
starts at the first search. The Hub searches in its own process instead until the
child has said it is ready, for a while after it died, on a machine where the Hub may
use one CPU only, while the child is `SHARE_DEPTH` searches behind (the Hub then
searches beside it: a burst is served by both), and for any search that failed in it
(a symlinked prefix, a storage error). The answer is the same either way, both caches
being validated against the files on every search, and an error is raised there as
it always was. The child exits when the Hub's end of the socket closes, the Hub's
death included.
"""

from __future__ import annotations

import collections
import contextlib
import logging
import os
import pickle
import signal
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import Future
from typing import Any

from amux.memory.cache import SearchCache
from amux.memory.search import Query, Searcher, search

log = logging.getLogger("amux.hub")

MESSAGE_MAX_BYTES = 1 << 16
"""A request is a query (at most 512 bytes) and a prefix; an answer is at most 8 KiB
of JSON (`RESPONSE_MAX_BYTES`) as a pickled dict."""
ANSWER_SECONDS = 10.0
"""How long a search waits for the child before the child is taken for stuck (a
search stops itself after 250 ms, and at most `SHARE_DEPTH` wait on it)."""
RESTART_SECONDS = 5.0
"""After the child died, how long searches stay in the Hub before a new one starts."""
SHARE_DEPTH = 3
"""Searches waiting on the child past which the Hub searches too, beside it."""
READY = b"ready"


class _Gone(Exception):
    """The child cannot answer this request: search in the Hub instead."""


class _Child:
    """One child process, its socket and the searches waiting on it, oldest first."""

    def __init__(self, sock: socket.socket, process: subprocess.Popen[bytes]) -> None:
        self.sock = sock
        self.process = process
        self.ready = False
        self.pending: collections.deque[Future[dict[str, Any]]] = collections.deque()


class SearchProcess:
    """The Hub's side: forwards searches to the child, or runs `fallback` itself."""

    def __init__(self, fallback: Searcher, *, restart_seconds: float = RESTART_SECONDS) -> None:
        self.fallback = fallback
        self._restart_seconds = restart_seconds
        self._lock = threading.Lock()  # guards the fields below; sending keeps the order
        self._child: _Child | None = None
        self._next_start = 0.0
        self._closed = not _several_cpus()

    @property
    def pid(self) -> int | None:
        """The child's pid while one is serving."""
        child = self._child
        return child.process.pid if child is not None and child.ready else None

    def __call__(self, scope_fd: int, scope_key: str, query: Query,
                 prefix: tuple[str, ...], limit: int) -> dict[str, Any]:
        try:
            answer = self._send(scope_fd, (scope_key, query, prefix, limit))
            return answer.result(timeout=ANSWER_SECONDS)
        except _Gone:
            pass
        except TimeoutError:
            log.warning("the search process did not answer in %.0f s; restarting it",
                        ANSWER_SECONDS)
            self._stop(kill=True)
        return self.fallback(scope_fd, scope_key, query, prefix, limit)

    def _send(self, scope_fd: int, request: tuple[Any, ...]) -> Future[dict[str, Any]]:
        message = pickle.dumps(request)
        with self._lock:
            child = self._child
            if child is None or not child.ready:
                self._start()
                raise _Gone
            if len(child.pending) >= SHARE_DEPTH:
                raise _Gone  # it is behind: this one is searched here, beside it
            try:
                socket.send_fds(child.sock, [message], [scope_fd])
            except OSError:
                raise _Gone from None  # it died: its reader sees the end and cleans up
            answer: Future[dict[str, Any]] = Future()
            child.pending.append(answer)
            return answer

    def _start(self) -> None:
        """Start a child unless one is starting, it is too soon after the last one
        died, or we are closed (called under the lock)."""
        if self._closed or self._child is not None or time.monotonic() < self._next_start:
            return
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            process = subprocess.Popen(
                [sys.executable, "-P", "-m", "amux.hub.searcher", str(theirs.fileno())],
                pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL, close_fds=True)
        except OSError as error:
            ours.close()
            log.warning("the search process could not start (%s); searching in the Hub",
                        error)
            self._next_start = time.monotonic() + self._restart_seconds
            return
        finally:
            theirs.close()
        child = self._child = _Child(ours, process)
        threading.Thread(target=self._read, args=(child,), name="amux-hub-search-reader",
                         daemon=True).start()

    def _read(self, child: _Child) -> None:
        """Hand each answer to the oldest waiting search; at the end, release them all."""
        try:
            while True:
                message = child.sock.recv(MESSAGE_MAX_BYTES)
                if not message:
                    break
                if message == READY:
                    child.ready = True
                    continue
                found = pickle.loads(message)  # before the pop: a bad answer fails them all
                with self._lock:
                    answer = child.pending.popleft()
                if found is None:
                    answer.set_exception(_Gone())
                else:
                    answer.set_result(found)
        except Exception as error:  # anything it says wrong ends it
            log.warning("the search process failed (%r); searching in the Hub", error)
        with self._lock:
            if self._child is child:
                self._child = None
                # one that cannot even start is not started again every few seconds
                pause = self._restart_seconds * (1 if child.ready else 12)
                self._next_start = time.monotonic() + pause
            pending, child.pending = child.pending, collections.deque()
        for answer in pending:
            answer.set_exception(_Gone())
        child.sock.close()
        _reap(child.process)
        if not child.ready and child.process.returncode not in (0, -signal.SIGKILL):
            log.warning("the search process exited before it was ready (exit %s, its error "
                        "is in this log); searching in the Hub", child.process.returncode)

    def _stop(self, *, kill: bool) -> _Child | None:
        with self._lock:
            child, self._child = self._child, None
            self._next_start = time.monotonic() + self._restart_seconds
        if child is not None:
            if kill:
                with contextlib.suppress(OSError):
                    child.process.kill()
            with contextlib.suppress(OSError):
                child.sock.shutdown(socket.SHUT_RDWR)  # its reader wakes, releases all
        return child

    def close(self) -> None:
        """Stop the child (it exits at the end of its socket); search in the Hub."""
        with self._lock:
            self._closed = True
        child = self._stop(kill=False)
        if child is not None:
            _reap(child.process)


def _reap(process: subprocess.Popen[bytes]) -> None:
    try:
        process.wait(timeout=2.0)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def _several_cpus() -> bool:
    """A child helps only when it can run beside the Hub."""
    return len(os.sched_getaffinity(0)) > 1


def serve(sock: socket.socket) -> None:
    """The child: answer searches in order until the Hub's end closes.

    An answer is the response dict, or None when the search failed here (the Hub then
    runs it itself, raising what it raises there)."""
    cache = SearchCache()
    sock.send(READY)
    while True:
        message, fds, _flags, _address = socket.recv_fds(sock, MESSAGE_MAX_BYTES, 1)
        if not message:
            return
        found: dict[str, Any] | None = None
        try:
            scope_key, query, prefix, limit = pickle.loads(message)
            found = search(fds[0], scope_key, query, prefix, limit, cache, time.monotonic)
        except Exception:  # the Hub repeats the search and reports what it raises
            found = None
        finally:
            for fd in fds:
                os.close(fd)
        sock.send(pickle.dumps(found))


def main() -> int:
    """`python -P -m amux.hub.searcher FD`: the Hub starts it; FD is its socket's end."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a ^C to the Hub's terminal is the Hub's
    with (socket.socket(fileno=int(sys.argv[1])) as sock,
          contextlib.suppress(BrokenPipeError, ConnectionResetError)):
        serve(sock)
    return 0


if __name__ == "__main__":
    sys.exit(main())
