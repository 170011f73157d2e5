"""A second `versions.VersionStore` for tests: every version in memory, recorded at once."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from amux.memory.paths import LogicalPath
from amux.memory.revision import ABSENT, revision_of
from amux.memory.scope import Scope
from amux.memory.versions import HAND_EDIT, NOBODY, Change


class InMemory:
    """Every change of every scope in a list, oldest first; nothing on disk."""

    def __init__(self) -> None:
        self.max_bytes = 1 << 20
        self.max_age_seconds = 0.0
        self.changes: dict[tuple[str, ...], list[Change]] = {}
        self.closed = False

    def set_limits(self, max_bytes: int, max_age_seconds: float) -> None:
        self.max_bytes, self.max_age_seconds = max_bytes, max_age_seconds

    def attach(self, memory_root: int) -> None:
        pass  # nothing is kept beside the documents

    def keep(self, scope: Scope, logical: LogicalPath, directory: int, current: bytes,
             revision: str) -> None:
        if self._newest(scope).get(logical.text) != current:
            self.record(scope, Change(HAND_EDIT, logical.text, current, NOBODY, 0.0, revision))

    def record(self, scope: Scope, change: Change) -> None:
        self.changes.setdefault(scope.directory, []).append(change)

    def catch_up(self, scope: Scope, documents: Mapping[str, bytes]) -> int:
        newest = self._newest(scope)
        edits = [Change(HAND_EDIT, path, data, NOBODY, 0.0)
                 for path, data in documents.items() if newest.get(path) != data]
        edits += [Change(HAND_EDIT, path, None, NOBODY, 0.0)
                  for path, data in newest.items() if data is not None and path not in documents]
        for edit in edits:
            self.record(scope, edit)
        return len(edits)

    def log(self, scope: Scope, path: str | None, since: float | None, limit: int,
            before: str | None, session: str | None) -> list[dict[str, Any]] | None:
        changes = list(enumerate(self.changes.get(scope.directory, [])))[::-1]
        commits = [_commit(index) for index, _ in changes]
        if before is not None:
            if before not in commits:
                return None
            changes = changes[commits.index(before) + 1:]
        found = [{"at": change.at, "path": change.path, "operation": change.operation,
                  "revision": _revision(change), "principal": change.author.principal,
                  "agent": change.author.agent, "session": change.author.session,
                  "commit": _commit(index)}
                 for index, change in changes
                 if (path is None or change.path == path)
                 and (since is None or change.at >= since)
                 and (session is None or change.author.session == session)]
        return found[:limit]

    def newest(self, scope: Scope, paths: Collection[str]) -> dict[str, dict[str, Any]]:
        found = self.log(scope, None, None, len(self.changes.get(scope.directory, [])), None,
                         None) or []
        return {change["path"]: change for change in reversed(found) if change["path"] in paths}

    def version(self, scope: Scope, path: str, revision: str) -> bytes | None:
        return next((change.data for change in self.changes.get(scope.directory, [])
                     if change.path == path and _revision(change) == revision), None)

    def purge(self, scope: Scope, path: str, revision: str | None,
              current: bytes | None) -> int:
        def purged(change: Change) -> bool:
            return change.path == path and change.data is not None and (
                _revision(change) == revision if revision is not None
                else change.data != current)

        changes = self.changes.get(scope.directory, [])
        left = [change for change in changes if not purged(change)]
        self.changes[scope.directory] = left
        return len(changes) - len(left)

    def size(self, scope: Scope) -> int:
        return sum(len(change.data or b"") for change in self.changes.get(scope.directory, []))

    def close(self) -> None:
        self.closed = True

    def _newest(self, scope: Scope) -> dict[str, bytes | None]:
        return {change.path: change.data for change in self.changes.get(scope.directory, [])}


def _revision(change: Change) -> str:
    if change.data is None:
        return ABSENT
    return change.revision or revision_of(change.data)


def _commit(index: int) -> str:
    """The commit id this engine gives its `index`-th change of a scope (40 hex digits)."""
    return f"{index + 1:040x}"
