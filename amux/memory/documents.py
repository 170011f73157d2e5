"""The scope's documents as the memory doctor reads them: one bounded walk.

The doctor's checks are pure functions of what this collects (`amux.memory.health`),
so they are tested without a Hub. The walk never follows symlinks and reads each
document once; past twice the scope limits (offline edits) the rest is counted
from `lstat` only or not at all, and `Collected.incomplete` says so.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field

from amux.memory import fs
from amux.memory.limits import (
    ENTRY_NAME,
    SCAN_MAX_DIR_ENTRIES,
    SCOPE_MAX_BYTES,
    SCOPE_MAX_DOCUMENTS,
)

READ_MAX_DOCUMENTS = 2 * SCOPE_MAX_DOCUMENTS
READ_MAX_BYTES = 2 * SCOPE_MAX_BYTES
WALK_MAX_ENTRIES = 4 * SCAN_MAX_DIR_ENTRIES


@dataclass
class Document:
    """One document of the scope as the doctor saw it."""

    path: str
    size: int
    mtime: float
    data: bytes | None
    """None when the read budget was spent before it (counted from `lstat` only)."""
    mode: int = fs.DOCUMENT_MODE

    def __post_init__(self) -> None:
        self.text: str | None = None
        self.bad_byte: int | None = None
        if self.data is not None:
            try:
                self.text = self.data.decode("utf-8")
            except UnicodeDecodeError as exc:
                self.bad_byte = exc.start

    @property
    def is_entry(self) -> bool:
        return self.path == ENTRY_NAME


@dataclass
class Collected:
    documents: list[Document]
    entries_seen: int
    """Directory entries listed (all of them, as the search budget counts them)."""
    incomplete: bool
    folders: dict[str, int] = field(default_factory=dict)
    """Permission bits of each folder holding a document ("" is the scope itself)."""


def collect(scope_fd: int | None) -> Collected:
    """Walk the scope once (never following symlinks) and read documents within budget."""
    if scope_fd is None:
        return Collected([], 0, False)
    walk = fs.TreeWalk(scope_fd, "", WALK_MAX_ENTRIES)
    documents: list[Document] = []
    folders: dict[str, int] = {}
    read_count = read_bytes = 0
    skipped = False
    for found in walk:
        folder = found.path[:len(found.path) - len(found.name)].rstrip("/")
        if folder not in folders:
            folders[folder] = stat.S_IMODE(os.fstat(found.dir_fd).st_mode)
        try:
            st = found.lstat()
        except FileNotFoundError:
            continue
        data = None
        if read_count < READ_MAX_DOCUMENTS and read_bytes + st.st_size <= READ_MAX_BYTES:
            got = found.read()
            if got is None:
                continue
            data, st = got
            read_count += 1
            read_bytes += len(data)
        else:
            skipped = True
        documents.append(Document(found.path, st.st_size, st.st_mtime, data,
                                  stat.S_IMODE(st.st_mode)))
    return Collected(documents, walk.entries_seen, skipped or walk.stopped_early, folders)
