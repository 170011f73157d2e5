"""Learning the name an agent gave its own session, from the files it writes (read only).

For an adapter with `session_files` (Codex), a new session's first run is watched: the
session files are listed before the agent starts, the agent's process tree is polled
while it runs for the ones it holds open, and they are listed again after it exits. The
files that are new, with their first lines and whether the agent held them, go to the
adapter's `pick`, which names the session or says why it cannot; what the files mean is
the adapter's knowledge, not the launcher's.

An adapter whose files say everything by themselves (OpenCode's plugin writes the id)
asks for no polling (`SessionFiles.held` false): only the listings are compared.

Polling is cheap on Linux (`/proc/<pid>/task/*/children` and `/proc/<pid>/fd` of the
tree only, ~0.5 ms), every `POLL_INTERVALS` seconds: often at first, when a short
`codex exec` holds its rollout for a few hundred milliseconds, then rarely, for an
interactive session whose thread starts at its first prompt. Elsewhere psutil walks the
tree. A tree that cannot be read (permissions) marks the run as not watched, which the
adapter takes into account. The session files themselves are listed and read as the
user the agent runs as (`UserFiles`: for an isolated run, by the helper acting as the
target); the launcher reads only /proc.
"""

from __future__ import annotations

import fnmatch
import os
import threading
import time

from amux.adapters.base import FinishedRun, SessionFile, SessionFiles
from amux.launcher.userfiles import UserFiles

POLL_INTERVALS = ((2.0, 0.05), (20.0, 0.25), (float("inf"), 1.0))
"""(until this many seconds into the run, poll every this many seconds)."""
FIRST_LINE_LIMIT = 1 << 20


class SessionWatch:
    """One run of the agent, watched for the session files of `spec`."""

    def __init__(self, spec: SessionFiles, files: UserFiles | None = None) -> None:
        self.spec = spec
        self._files = files or UserFiles()
        self._root = self._files.realpath(spec.directory)
        self._before = self._listing()
        self._held: set[str] = set()
        self._watched = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._started = False
        self.started_at = time.time()

    def start(self, pid: int) -> None:
        """Start polling the tree of the agent `pid` (supervise()'s `on_start`), unless the
        adapter needs no held files (`SessionFiles.held`)."""
        self._started = True
        if not self.spec.held:
            return
        self._thread = threading.Thread(target=self._poll, args=(pid,), daemon=True,
                                        name="amux-session-watch")
        self._thread.start()

    def finish(self, argv: list[str], cwd: str) -> tuple[str | None, str | None]:
        """After the agent exited: the adapter's pick of the session it created (nothing if
        the agent never started)."""
        if not self._started:
            return None, None
        ended_at = time.time()
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        new = (self._listing() | self._held) - self._before
        files = tuple(SessionFile(path, self._first_line(path), path in self._held)
                      for path in sorted(new))
        return self.spec.pick(FinishedRun(tuple(argv), cwd, self.started_at, ended_at,
                                          self._watched, files))

    def _poll(self, pid: int) -> None:
        begun = time.monotonic()
        while True:
            held = open_files(pid)
            if held is None:  # the tree cannot be read: say so rather than miss a file
                self._watched = False
                return
            self._watched = True
            self._held |= {path for path in held if self._matches(path)}
            elapsed = time.monotonic() - begun
            interval = next(every for until, every in POLL_INTERVALS if elapsed < until)
            if self._stop.wait(interval):
                return

    def _matches(self, path: str) -> bool:
        return (path.startswith(self._root + os.sep)
                and fnmatch.fnmatch(os.path.basename(path), self.spec.pattern))

    def _listing(self) -> set[str]:
        try:
            return self._files.matching(self._root, self.spec.pattern)
        except OSError:
            return set()

    def _first_line(self, path: str) -> str:
        try:
            return self._files.first_line(path, FIRST_LINE_LIMIT)
        except OSError:
            return ""


def open_files(pid: int) -> set[str] | None:
    """The paths open in `pid` and its descendants (empty once it is gone), None if they
    cannot be read."""
    if os.path.exists(f"/proc/self/task/{os.getpid()}/children"):
        return _proc_fds(_proc_tree(pid))
    return _psutil_files(pid)


def _proc_tree(pid: int) -> list[int]:
    """`pid` and its descendants, from the `children` files of /proc."""
    tree, index = [pid], 0
    while index < len(tree):
        current = tree[index]
        index += 1
        try:
            tasks = os.listdir(f"/proc/{current}/task")
        except OSError:  # gone
            continue
        for task in tasks:
            try:
                with open(f"/proc/{current}/task/{task}/children", encoding="ascii") as handle:
                    tree += [int(child) for child in handle.read().split()]
            except OSError:  # the thread or the process ended meanwhile
                continue
    return tree


def _proc_fds(tree: list[int]) -> set[str] | None:
    paths: set[str] = set()
    for pid in tree:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except FileNotFoundError:  # gone
            continue
        except PermissionError:
            return None
        for fd in fds:
            try:
                paths.add(os.readlink(f"/proc/{pid}/fd/{fd}"))
            except OSError:  # closed meanwhile
                continue
    return paths


def _psutil_files(pid: int) -> set[str] | None:
    import psutil  # not needed where /proc answers

    try:
        root = psutil.Process(pid)
        tree = [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return set()
    except psutil.Error:
        return None
    paths: set[str] = set()
    for process in tree:
        try:
            paths |= {entry.path for entry in process.open_files()}
        except psutil.NoSuchProcess:
            continue
        except psutil.Error:
            return None
    return paths
