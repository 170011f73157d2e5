"""The name of a sync's conflict copy: `NAME.sync-conflict-<12 hex>.md`, the remote's text
kept beside `NAME.md` when both sides changed the same lines (amux.hub.sync). The doctor
lists copies until they are resolved; the memory page marks them and offers the choice."""

from __future__ import annotations

MARK = ".sync-conflict-"
_HEX = frozenset("0123456789abcdef")


def copy_path(path: str, revision: str) -> str:
    """Where the remote's text of `path` (at `revision`, a hex digest) is kept."""
    return f"{path.removesuffix('.md')}{MARK}{revision[:12]}.md"


def original_of(path: str) -> str | None:
    """The document a conflict copy was kept beside, or None for any other path."""
    stem, mark, rest = path.rpartition(MARK)
    named = bool(stem) and not stem.endswith("/")
    if mark and named and len(rest) == 15 and rest.endswith(".md") and set(rest[:12]) <= _HEX:
        return stem + ".md"
    return None
