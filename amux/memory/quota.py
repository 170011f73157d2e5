"""Quotas of SPEC §2, checked before any byte is written.

Per-document limits are absolute. Scope limits refuse only a write that grows an
over-limit figure, so a scope already over a limit (offline edits) still accepts
writes that shrink or keep it.
"""

from __future__ import annotations

from dataclasses import dataclass

from amux.errors import QuotaExceeded
from amux.memory.limits import (
    ENTRY_MAX_BYTES,
    ENTRY_MAX_LINES,
    ENTRY_NAME,
    SCOPE_MAX_BYTES,
    SCOPE_MAX_DOCUMENTS,
    TOPIC_MAX_BYTES,
)
from amux.memory.lines import line_count
from amux.memory.paths import LogicalPath


@dataclass
class ScopeUsage:
    """Documents and bytes a scope holds (only `*.md` documents count)."""

    documents: int
    bytes: int


def check_document(path: LogicalPath, data: bytes) -> None:
    """Refuse a document over its own size (and, for the entry, line) limit."""
    size = len(data)
    if path.segments == (ENTRY_NAME,):
        if size > ENTRY_MAX_BYTES:
            raise QuotaExceeded(
                "entry_bytes", ENTRY_MAX_BYTES, size,
                f"MEMORY.md would be {size} bytes; the entry limit is {ENTRY_MAX_BYTES} bytes "
                "(2 KiB): keep the entry small and move detail into topic documents",
            )
        lines = line_count(data)
        if lines > ENTRY_MAX_LINES:
            raise QuotaExceeded(
                "entry_lines", ENTRY_MAX_LINES, lines,
                f"MEMORY.md would have {lines} lines; the entry limit is {ENTRY_MAX_LINES} "
                "lines: keep the entry small and move detail into topic documents",
            )
    elif size > TOPIC_MAX_BYTES:
        raise QuotaExceeded(
            "document_bytes", TOPIC_MAX_BYTES, size,
            f"{path.text} would be {size} bytes; a topic document holds at most "
            f"{TOPIC_MAX_BYTES} bytes (64 KiB): split it by subject",
        )


def check_scope(usage: ScopeUsage, old_size: int | None, new_size: int) -> None:
    """Refuse a write (`old_size` None = create) that grows the scope past a limit."""
    if old_size is None:
        documents = usage.documents + 1
        if documents > SCOPE_MAX_DOCUMENTS:
            raise QuotaExceeded(
                "scope_documents", SCOPE_MAX_DOCUMENTS, documents,
                f"the scope would hold {documents} documents; the limit is "
                f"{SCOPE_MAX_DOCUMENTS}: merge or forget documents first",
            )
    total = usage.bytes - (old_size or 0) + new_size
    if total > SCOPE_MAX_BYTES and new_size > (old_size or 0):
        raise QuotaExceeded(
            "scope_bytes", SCOPE_MAX_BYTES, total,
            f"the scope would hold {total} bytes; the limit is {SCOPE_MAX_BYTES} bytes "
            "(16 MiB): shorten or forget documents first",
        )
