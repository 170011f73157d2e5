"""Every size, count and time budget of SPEC §2 in one place (bytes and lines, not tokens)."""

from __future__ import annotations

KIB = 1024
MIB = 1024 * KIB

ENTRY_NAME = "MEMORY.md"
"""The scope's small entry point; only the one at the scope root has the entry limits."""

ENTRY_MAX_BYTES = 2 * KIB
ENTRY_MAX_LINES = 64
TOPIC_MAX_BYTES = 64 * KIB
SCOPE_MAX_DOCUMENTS = 1024
SCOPE_MAX_BYTES = 16 * MIB

PATH_MAX_BYTES = 1024
SEGMENT_MAX_BYTES = 255

QUERY_MAX_BYTES = 512
QUERY_MAX_TERMS = 16
SEARCH_DEFAULT_LIMIT = 5
SEARCH_MAX_LIMIT = 20
SCAN_MAX_FILES = 1024
SCAN_MAX_BYTES = 8 * MIB
SCAN_MAX_SECONDS = 0.250
SCAN_MAX_DIR_ENTRIES = 4096
HITS_PER_DOCUMENT = 3
SNIPPET_MAX_BYTES = 240

LIST_DEFAULT_LIMIT = 100
"""`amux memory list` (for people): documents per answer unless asked otherwise."""
LIST_MAX_LIMIT = 1000

RESPONSE_MAX_BYTES = 8 * KIB
"""Storage responses (search, get) count their compact JSON bytes against this."""

STALE_AFTER_SECONDS = 86_400
