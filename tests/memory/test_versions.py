"""The store talks to history only through `versions.VersionStore`: a second engine (every
version in memory, recorded at once) plugs in and the store's history operations work."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from amux.errors import NotFound
from amux.memory import GLOBAL, Store
from amux.memory.revision import ABSENT, revision_of
from amux.memory.versions import HAND_EDIT, Author, VersionStore
from tests.memory.versions_in_memory import InMemory

ALICE = Author("alice", "claude", "20261202-101500-abcdef")


@pytest.fixture
def engine() -> InMemory:
    return InMemory()


@pytest.fixture
def store(tmp_path: Path, engine: InMemory) -> Iterator[Store]:
    versions: VersionStore = engine  # mypy: the test engine is one
    with Store(tmp_path / "memory", exclusive=True, history=versions) as store:
        yield store


def operations(store: Store, **query: object) -> list[tuple[str, str, str | None]]:
    return [(c["operation"], c["path"], c["principal"])
            for c in store.log(GLOBAL, **query)["changes"]]


def test_another_engine_records_upserts_and_forgets_and_gives_versions_back(
        store: Store) -> None:
    first = store.upsert(GLOBAL, "notes/a.md", "v1\n", ABSENT, ALICE)["revision"]
    second = store.upsert(GLOBAL, "notes/a.md", "v2\n", first, ALICE)["revision"]
    store.forget(GLOBAL, "notes/a.md", second, Author("bob"))
    assert operations(store) == [("forget", "notes/a.md", "bob"),
                                 ("update", "notes/a.md", "alice"),
                                 ("create", "notes/a.md", "alice")]
    assert store.version(GLOBAL, "notes/a.md", first) == b"v1\n"
    assert store.version(GLOBAL, "notes/a.md", second) == b"v2\n"
    restored = store.upsert(GLOBAL, "notes/a.md", store.version(GLOBAL, "notes/a.md", first),
                            ABSENT, ALICE, operation="restore")
    assert restored["revision"] == first
    assert operations(store, path="notes/a.md", limit=1) == [("restore", "notes/a.md", "alice")]
    with pytest.raises(NotFound):
        store.version(GLOBAL, "notes/a.md", "0" * 64)


def test_another_engine_keeps_a_hand_edit_and_catches_up(
        store: Store, engine: InMemory, tmp_path: Path) -> None:
    revision = store.upsert(GLOBAL, "a.md", "agent's\n", ABSENT, ALICE)["revision"]
    (tmp_path / "memory" / "global" / "a.md").write_bytes(b"by hand\n")
    store.upsert(GLOBAL, "a.md", "agent's again\n", revision_of(b"by hand\n"), ALICE)
    (tmp_path / "memory" / "global" / "b.md").write_bytes(b"new by hand\n")
    assert store.catch_up_history() == 1
    assert operations(store) == [(HAND_EDIT, "b.md", None), ("update", "a.md", "alice"),
                                 (HAND_EDIT, "a.md", None), ("create", "a.md", "alice")]
    assert store.version(GLOBAL, "a.md", revision_of(b"by hand\n")) == b"by hand\n"
    assert sorted(p.name for p in (tmp_path / "memory" / "global").iterdir()) == [
        "a.md", "b.md"]  # this engine keeps nothing beside the documents
    assert store.purge_history(GLOBAL, "a.md", revision)["purged"] == 1
    assert store.history is engine and not engine.closed
    row = next(r for r in store.doctor(GLOBAL)["quota"] if r["quota"] == "history_bytes")
    assert row == {"quota": "history_bytes", "used": engine.size(GLOBAL),
                   "limit": 1 << 20, "path": None}
