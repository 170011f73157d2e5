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
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from amux.client.connection import owner_config_path, read_config
from amux.client.read import read_whole
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
        from amux.errors import AmuxError
        from amux.hub import control

        try:
            control.start(self.home)
            with self._client() as client:
                client.call("/v1/admin/config", {"action": "set", "key": "memory.enabled",
                                                 "value": "true"})
        except AmuxError as error:
            self.stop()
            raise HarnessError(f"cannot start the evaluation's Hub under {self.home}: "
                               f"{error.code}: {error.message}") from None
        return self

    def stop(self) -> None:
        """Stop the Hub (it finishes what it is doing) and remove the temporary home."""
        from amux.errors import AmuxError
        from amux.hub import control

        with contextlib.suppress(AmuxError):
            control.stop(self.home)
        shutil.rmtree(self.directory, ignore_errors=True)

    def __enter__(self) -> EvalHub:
        return self.start()

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.stop()

    def _client(self) -> HubClient:
        return HubClient(read_config(owner_config_path(self.home), "local default", None))

    def documents(self) -> dict[str, str]:
        """Every document of the store (the global scope) and its content."""
        found: dict[str, str] = {}
        with self._client() as client:
            for document in client.call("/v1/memory/list", {"limit": 1000})["documents"]:
                whole = read_whole(client, str(document["path"]))
                if whole is not None:
                    found[str(document["path"])] = whole[0]
        return found

    def reset(self, seed: dict[str, str]) -> None:
        """Forget every document, then write `seed`."""
        with self._client() as client:
            for document in client.call("/v1/memory/list", {"limit": 1000})["documents"]:
                client.call("/v1/memory/forget", {"path": document["path"],
                                                  "expected_revision": document["revision"]})
            for path, content in seed.items():
                client.call("/v1/memory/upsert", {"path": path, "content": content,
                                                  "expected_revision": "absent"})


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


SKIPPED = frozenset({".git", "node_modules"})
"""Directories a snapshot leaves out: git's objects, and the packages an agent installs
into its home (OpenCode installs its plugin package into every fresh config directory;
their READMEs are no notes of the session's)."""


def snapshot(root: Path) -> dict[str, FileState]:
    """Regular files under `root` by relative path (`SKIPPED` directories left out;
    symlinks not followed)."""
    found: dict[str, FileState] = {}
    for directory, subdirectories, files in os.walk(root):
        subdirectories[:] = [d for d in subdirectories if d not in SKIPPED]
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
