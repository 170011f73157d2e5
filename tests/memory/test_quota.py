"""Quotas of SPEC §2: checked before any byte is written, at and one past each limit."""

from __future__ import annotations

from pathlib import Path

import pytest

from amux.errors import QuotaExceeded
from amux.memory import Scope, Store
from amux.memory.limits import KIB, MIB
from amux.memory.revision import ABSENT


def _files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def test_entry_bytes_limit(store: Store, scope: Scope) -> None:
    at_limit = ("x" * 63 + "\n") * 32  # 2,048 bytes, 32 lines
    assert len(at_limit) == 2 * KIB
    store.upsert(scope, "MEMORY.md", at_limit, ABSENT)
    with pytest.raises(QuotaExceeded) as caught:
        store.upsert(scope, "MEMORY.md", at_limit + "y", store.get(scope, "MEMORY.md")["revision"])
    error = caught.value
    assert (error.quota, error.limit, error.actual) == ("entry_bytes", 2048, 2049)
    assert "2049" in error.message and "2048" in error.message
    assert store.get(scope, "MEMORY.md")["content"] == at_limit


def test_entry_lines_limit(store: Store, scope: Scope) -> None:
    store.upsert(scope, "MEMORY.md", "x\n" * 64, ABSENT)
    revision = store.get(scope, "MEMORY.md")["revision"]
    with pytest.raises(QuotaExceeded) as caught:
        store.upsert(scope, "MEMORY.md", "x\n" * 64 + "y", revision)  # 65th line, no newline
    assert (caught.value.quota, caught.value.limit, caught.value.actual) == ("entry_lines", 64, 65)


def test_entry_limits_apply_only_at_the_scope_root(store: Store, scope: Scope) -> None:
    store.upsert(scope, "projects/p/MEMORY.md", "x\n" * 200, ABSENT)


def test_topic_limit(store: Store, scope: Scope, memory_root: Path) -> None:
    store.upsert(scope, "topic.md", b"t" * (64 * KIB), ABSENT)
    before = _files(memory_root)
    with pytest.raises(QuotaExceeded) as caught:
        store.upsert(scope, "new/topic.md", b"t" * (64 * KIB + 1), ABSENT)
    assert (caught.value.quota, caught.value.actual) == ("document_bytes", 64 * KIB + 1)
    assert _files(memory_root) == before  # nothing written, not even the folder


def test_scope_document_count(store: Store, scope: Scope, memory_root: Path) -> None:
    base = memory_root / "global"
    base.mkdir(parents=True)
    for index in range(1023):
        (base / f"d{index:04}.md").write_bytes(b"x")
    store.upsert(scope, "last.md", "1,024th document", ABSENT)
    with pytest.raises(QuotaExceeded) as caught:
        store.upsert(scope, "one-more.md", "1,025th", ABSENT)
    assert (caught.value.quota, caught.value.limit, caught.value.actual) == (
        "scope_documents", 1024, 1025,
    )
    # Replacing a document does not add one: still accepted at the limit.
    store.upsert(scope, "last.md", "replaced", store.get(scope, "last.md")["revision"])
    # Non-Markdown and dot-files are not documents and are not counted.
    (base / "notes.txt").write_text("ignored")
    (base / ".hidden.md").write_text("ignored")
    assert store.usage(scope).documents == 1024


def test_scope_bytes(memory_root: Path, scope: Scope) -> None:
    base = memory_root / "global"
    base.mkdir(parents=True)
    for index in range(255):
        (base / f"big{index:03}.md").write_bytes(b"b" * (64 * KIB))
    filler = 16 * MIB - 255 * 64 * KIB - 10  # leaves room for exactly 10 more bytes
    (base / "filler.md").write_bytes(b"f" * filler)
    with Store(memory_root) as store:
        store.upsert(scope, "ten.md", b"0123456789", ABSENT)  # exactly 16 MiB
        assert store.usage(scope).bytes == 16 * MIB
        with pytest.raises(QuotaExceeded) as caught:
            store.upsert(scope, "one.md", b"1", ABSENT)
        assert (caught.value.quota, caught.value.limit, caught.value.actual) == (
            "scope_bytes", 16 * MIB, 16 * MIB + 1,
        )


def test_over_limit_scope_accepts_writes_that_do_not_grow(memory_root: Path, scope: Scope) -> None:
    base = memory_root / "global"
    base.mkdir(parents=True)
    for index in range(257):  # offline edits: 257 x 64 KiB is over 16 MiB
        (base / f"big{index:03}.md").write_bytes(b"b" * (64 * KIB))
    with Store(memory_root) as store:
        first = store.get(scope, "big000.md")["revision"]
        shrunk = store.upsert(scope, "big000.md", b"small", first)
        assert store.usage(scope).bytes == 256 * 64 * KIB + 5  # still over the limit
        same = store.get(scope, "big001.md")["revision"]
        store.upsert(scope, "big001.md", b"c" * (64 * KIB), same)  # same size: accepted
        with pytest.raises(QuotaExceeded) as caught:
            store.upsert(scope, "big000.md", b"smaller", shrunk["revision"])  # grows: refused
        assert caught.value.quota == "scope_bytes"
        with pytest.raises(QuotaExceeded):
            store.upsert(scope, "new.md", b"x", ABSENT)
        assert (base / "big000.md").read_bytes() == b"small"
        assert not (base / "new.md").exists()
