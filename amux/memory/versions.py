"""What the store and the Hub need of memory history: the `VersionStore` interface and
the changes it records (docs/store.md "History").

`history.History` (a git repository per scope) implements it; another engine may, so
the store and the Hub name only this.
"""

from __future__ import annotations

import re

from amux.errors import InvalidArgument, shown
from amux.typing_light import NamedTuple, Protocol

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Collection, Mapping
    from typing import Any

    from amux.memory.paths import LogicalPath
    from amux.memory.scope import Scope

OPERATIONS = ("create", "update", "forget", "restore", "hand edit")
HAND_EDIT = "hand edit"
LOG_DEFAULT_LIMIT = 50
LOG_MAX_LIMIT = 10_000


class Author(NamedTuple):
    """Who made a change: the principal, and for a launched agent its name and session."""

    principal: str | None
    agent: str | None = None
    session: str | None = None
    source: str | None = None
    """Where the content came from when it was imported (`amux memory import`: "import
    claude /home/u/.claude/projects/-home-u-shop/memory/x.md"); None for any other write."""


NOBODY = Author(None)
"""The author of a hand edit: found on disk, made by no principal through the Hub."""

_LABEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


def check_label(value: object, what: str) -> str | None:
    """An `Author`'s agent name or session id as a caller gives it (or None)."""
    if value is None:
        return None
    if not isinstance(value, str) or not _LABEL.fullmatch(value):
        raise InvalidArgument(f"{what} must be 1-64 of A-Z a-z 0-9 . _ - starting with a "
                              f"letter or digit, got {shown(value)}")
    return value


class Change(NamedTuple):
    """One change of one document, as the store made it."""

    operation: str
    """One of `OPERATIONS`."""
    path: str
    data: bytes | None
    """The document's bytes after the change; None: it is gone (forget)."""
    author: Author
    at: float
    """Wall-clock seconds."""
    revision: str | None = None
    """`data`'s revision when the caller has it already (else hashed when recorded)."""


class VersionStore(Protocol):
    """Every version of every scope's documents, who made it, and a way back; safe for
    many threads. The store calls `keep`, `record`, `catch_up` and `purge` holding the
    scope's write lock."""

    @property
    def max_bytes(self) -> int:
        """The most bytes a scope's history takes (retention drops its oldest past it)."""
        ...

    def set_limits(self, max_bytes: int, max_age_seconds: float) -> None:
        """Retention: at most `max_bytes` per scope, no version older than
        `max_age_seconds` (0: none dropped for its age) but each document's newest."""
        ...

    def attach(self, memory_root: int) -> None:
        """The memory root (an open directory) whose documents these are, once, by the
        store that opens it; the versions `keep` holds beside documents are below it."""
        ...

    def keep(self, scope: Scope, logical: LogicalPath, directory: int, current: bytes,
             revision: str) -> None:
        """Before the document (in the open `directory`) is replaced or removed: its
        `current` bytes, at `revision`, are kept until history has them. Anything made in
        `directory` is durable with the write's own fsync of it."""
        ...

    def record(self, scope: Scope, change: Change) -> None:
        """A change the store made (durably, already); it may be committed later."""
        ...

    def catch_up(self, scope: Scope, documents: Mapping[str, bytes]) -> int:
        """Record as hand edits how the scope's `documents` (path → bytes, all of them)
        differ from its history, after the versions `keep` held that a crash left; the
        number recorded."""
        ...

    def log(self, scope: Scope, path: str | None, since: float | None, limit: int,
            before: str | None, session: str | None) -> list[dict[str, Any]] | None:
        """At most `limit` of the scope's changes, newest first: of `path` only, from
        `since` on, older than the change whose commit is `before`, made by amux session
        `session`; each as docs/wire.md's log shows it (at, path, operation, revision,
        bytes, principal, agent, session, commit). None when no change's commit is
        `before`."""
        ...

    def newest(self, scope: Scope, paths: Collection[str]) -> dict[str, dict[str, Any]]:
        """The newest change of each of `paths` that history has one of, as `log` shows
        it, by path."""
        ...

    def version(self, scope: Scope, path: str, revision: str) -> bytes | None:
        """The bytes `path` had at `revision`; None when history has no such version."""
        ...

    def purge(self, scope: Scope, path: str, revision: str | None,
              current: bytes | None) -> int:
        """Remove `path`'s version `revision`, or (None) every version of it but its
        `current` bytes, leaving nothing of them; the number of changes removed."""
        ...

    def size(self, scope: Scope) -> int:
        """Bytes the scope's history takes."""
        ...

    def close(self) -> None:
        """Record what is waiting, then release everything held."""
        ...
