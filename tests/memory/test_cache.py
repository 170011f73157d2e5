"""The search cache: bounded in bytes, drops other scopes first, prunes deleted documents."""

from __future__ import annotations

from pathlib import Path

import pytest

from amux.memory import Scope, Store, fs
from amux.memory.cache import CachedDocument, SearchCache


def _document(size: int) -> CachedDocument:
    raw = b"x" * size
    return CachedDocument((1, size, 0, 0), raw, raw.lower(), b"p.md")


def test_bounded_and_other_scopes_go_first() -> None:
    cache = SearchCache(max_bytes=100)
    cache.scope("a")
    cache.put("a", "one.md", _document(20))  # costs 40 (raw + folded)
    cache.scope("b")
    cache.put("b", "two.md", _document(20))
    assert cache.size_bytes == 80
    cache.scope("b")
    cache.put("b", "three.md", _document(11))  # 102: fits only once scope a is dropped
    assert cache.size_bytes == 62
    assert "one.md" not in cache.scope("a").documents
    assert set(cache.scope("b").documents) == {"two.md", "three.md"}


def test_a_document_larger_than_the_cache_is_not_kept() -> None:
    cache = SearchCache(max_bytes=10)
    cache.scope("a")
    cache.put("a", "big.md", _document(20))
    assert cache.size_bytes == 0 and cache.scope("a").documents == {}


def test_complete_scans_prune_deleted_documents(
    memory_root: Path, scope: Scope, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fs, "SETTLE_NS", -(10**18))  # trust even files written just now
    folder = memory_root / "global"
    folder.mkdir(parents=True)
    for name in ("a.md", "b.md"):
        (folder / name).write_text("term\n")
    with Store(memory_root) as store:
        store.search(scope, "term")
        assert set(store.cache.scope("global").documents) == {"a.md", "b.md"}
        (folder / "b.md").unlink()
        store.search(scope, "term")
        assert set(store.cache.scope("global").documents) == {"a.md"}
        assert store.cache.size_bytes == 2 * len(b"term\n")


def test_fresh_files_are_not_cached(memory_root: Path, store: Store, scope: Scope) -> None:
    store.upsert(scope, "new.md", "term\n", "absent")
    assert [r["path"] for r in store.search(scope, "term")["results"]] == ["new.md"]
    assert store.cache.scope("global").documents == {}


def test_postings_check_each_document_once_and_stay_bounded(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A term's posting scans a document once (a changed document is a new object, so it
    is scanned again); the least recently searched terms go past the entry bound."""
    from amux.memory import cache

    postings = cache.Postings()
    old = CachedDocument((1, 3, 0, 0), b"abc", b"abc", b"p.md")
    posting = postings.get(b"b", 1)
    posting.check(old)
    assert postings.get(b"b", 1) is posting and old.serial in posting.content
    new = CachedDocument((1, 3, 1, 1), b"xyz", b"xyz", b"p.md")  # the same path, changed
    posting.check(new)
    assert new.serial in posting.checked and new.serial not in posting.content
    monkeypatch.setattr(cache, "POSTINGS_MAX_ENTRIES", 4)
    for term in (b"c", b"d", b"e"):
        postings.get(term, 1).check(new)
    assert postings.get(b"b", 1) is not posting  # forgotten: the oldest went first
