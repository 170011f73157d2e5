"""The evaluation's own world: a temporary AMUX_HOME with its Hub, run roots, snapshots.

`EvalHub` is a fresh AMUX_HOME whose Hub is started on demand (the same code path as
the first `amux` command), memory switched on, and stopped and removed at the end: the
user's real memory is never touched. Its store is read and reset through the Hub API
with the owner's connection (`documents`, `reset`).

`make_repository` writes the throwaway git repository every session works in;
`snapshot` records the files under a run root so a session's writes outside memory
show up as a diff.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

from amux.client.connection import owner_config_path, read_config
from amux.client.transport import HubClient
from amux.eval.scenarios import REMOTE, REPOSITORY

TEXT_MAX_BYTES = 256 * 1024


class HarnessError(Exception):
    """The evaluation itself cannot go on (no Hub, no agent, a broken run root)."""


class EvalHub:
    """A temporary AMUX_HOME and its Hub; a context manager."""

    def __init__(self) -> None:
        self.directory = Path(tempfile.mkdtemp(prefix="amux-eval-"))
        self.home = self.directory / "home"

    def start(self) -> EvalHub:
        from amux.client.wire import ClientError
        from amux.hub import control

        try:
            with warnings.catch_warnings():
                # The Hub outlives its starter by design: `control.start` leaves its Popen
                # to the garbage collector, which warns that it still runs.
                warnings.simplefilter("ignore", ResourceWarning)
                control.start(self.home)
            self._call("/v1/admin/config", {"action": "set", "key": "memory.enabled",
                                            "value": "true"})
        except ClientError as error:
            self.stop()
            raise HarnessError(f"cannot start the evaluation's Hub under {self.home}: "
                               f"{error.code}: {error.message}") from None
        return self

    def stop(self) -> None:
        """SIGTERM the Hub and wait for it. Not `control.stop`: the Hub is this process's
        child, so it stays a zombie (and "alive" to `kill(pid, 0)`) until reaped here."""
        from amux.client.wire import ClientError
        from amux.hub import control

        with contextlib.suppress(ClientError, KeyError, ValueError, OSError):
            status = control.status(self.home)
            if status.get("running"):
                pid = int(status["pid"])
                os.kill(pid, signal.SIGTERM)
                deadline = time.monotonic() + control.READY_TIMEOUT
                while time.monotonic() < deadline and _alive(pid):
                    time.sleep(0.02)
        shutil.rmtree(self.directory, ignore_errors=True)

    def __enter__(self) -> EvalHub:
        return self.start()

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.stop()

    def _call(self, path: str, body: dict[str, Any]) -> Any:
        connection = read_config(owner_config_path(self.home), "local default", None)
        with HubClient(connection) as client:
            return client.call(path, body)

    def documents(self) -> dict[str, str]:
        """Every document of the store (the global scope) and its content."""
        listing = self._call("/v1/memory/list", {"limit": 1000})
        found: dict[str, str] = {}
        for document in listing.get("documents", []):
            path = str(document["path"])
            parts: list[str] = []
            offset: int | None = None
            while True:
                request: dict[str, Any] = {"path": path}
                if offset:
                    request["offset"] = offset
                page = self._call("/v1/memory/get", request)
                parts.append(str(page.get("content", "")))
                offset = page.get("next_offset")
                if not page.get("truncated") or not offset:
                    break
            found[path] = "".join(parts)
        return found

    def reset(self, seed: dict[str, str]) -> None:
        """Forget every document, then write `seed`."""
        listing = self._call("/v1/memory/list", {"limit": 1000})
        for document in listing.get("documents", []):
            self._call("/v1/memory/forget", {"path": document["path"],
                                             "expected_revision": document["revision"]})
        for path, content in seed.items():
            self._call("/v1/memory/upsert", {"path": path, "content": content,
                                             "expected_revision": "absent"})


def _alive(pid: int) -> bool:
    """Whether `pid` still runs; reaps it when it is our child and has exited."""
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
        return done == 0
    except ChildProcessError:  # not our child (or already reaped)
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True


def make_repository(work: Path) -> None:
    """The throwaway repository: REPOSITORY's files, committed, with a remote named."""
    for relative, content in REPOSITORY.items():
        path = work / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
    git = shutil.which("git")
    if git is None:
        return  # still a directory of files: the diff works the same
    env = {"PATH": os.environ.get("PATH", os.defpath), "HOME": str(work),
           "GIT_CONFIG_NOSYSTEM": "1", "GIT_AUTHOR_NAME": "amux eval",
           "GIT_AUTHOR_EMAIL": "eval@example.invalid", "GIT_COMMITTER_NAME": "amux eval",
           "GIT_COMMITTER_EMAIL": "eval@example.invalid"}
    for args in (["init", "-q", "-b", "main"], ["remote", "add", "origin", REMOTE],
                 ["add", "-A"], ["commit", "-q", "-m", "widgets"]):
        subprocess.run([git, *args], cwd=work, env=env, check=True, capture_output=True,
                       timeout=30)


@dataclass(frozen=True)
class FileState:
    digest: str
    size: int
    text: str | None
    """The content when it is UTF-8 and small enough to read (for fact tokens)."""


def snapshot(root: Path) -> dict[str, FileState]:
    """Regular files under `root` by relative path (`.git` directories left out; symlinks
    not followed)."""
    found: dict[str, FileState] = {}
    for directory, subdirectories, files in os.walk(root):
        subdirectories[:] = [d for d in subdirectories if d != ".git"]
        for name in files:
            path = Path(directory) / name
            try:
                if path.is_symlink() or not path.is_file():
                    continue
                data = path.read_bytes() if path.stat().st_size <= TEXT_MAX_BYTES else None
            except OSError:
                continue
            if data is None:
                found[str(path.relative_to(root))] = FileState("", path.stat().st_size, None)
                continue
            try:
                text: str | None = data.decode("utf-8")
            except UnicodeDecodeError:
                text = None
            found[str(path.relative_to(root))] = FileState(
                hashlib.sha256(data).hexdigest(), len(data), text)
    return found


def changed(before: dict[str, FileState], after: dict[str, FileState],
            ) -> dict[str, FileState | None]:
    """Paths created or changed (their new state) or deleted (None)."""
    out: dict[str, FileState | None] = {}
    for path, state in after.items():
        old = before.get(path)
        if old is None or old.digest != state.digest or old.size != state.size:
            out[path] = state
    for path in before.keys() - after.keys():
        out[path] = None
    return out
