"""Store operations (SPEC §2–3): conditional writes, forget, encodings, permissions, temps."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from amux.errors import InvalidArgument, InvalidPath, NotUtf8, RevisionConflict
from amux.memory import GLOBAL, Identity, Scope, Store, resolve_scope
from amux.memory.revision import ABSENT, revision_of


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_create_replace_and_conflict(store: Store, scope: Scope, memory_root: Path) -> None:
    created = store.upsert(scope, "notes/a.md", "v1\n", ABSENT)
    assert created == {"path": "notes/a.md", "revision": revision_of(b"v1\n"), "created": True}
    assert (memory_root / "global" / "notes" / "a.md").read_bytes() == b"v1\n"
    with pytest.raises(RevisionConflict) as caught:
        store.upsert(scope, "notes/a.md", "v2\n", ABSENT)
    assert caught.value.current_revision == created["revision"]
    assert caught.value.to_wire()["error"]["current_revision"] == created["revision"]
    replaced = store.upsert(scope, "notes/a.md", "v2\n", created["revision"])
    assert replaced == {"path": "notes/a.md", "revision": revision_of(b"v2\n"), "created": False}
    with pytest.raises(RevisionConflict):
        store.upsert(scope, "notes/a.md", "v3\n", created["revision"])  # stale revision
    with pytest.raises(RevisionConflict) as missing:
        store.upsert(scope, "other.md", "x", "0" * 64)  # replace of a missing document
    assert missing.value.current_revision == ABSENT
    assert store.get(scope, "notes/a.md")["content"] == "v2\n"


def test_forget(store: Store, scope: Scope, memory_root: Path) -> None:
    revision = store.upsert(scope, "a.md", "x", ABSENT)["revision"]
    with pytest.raises(RevisionConflict):
        store.forget(scope, "a.md", ABSENT)
    assert store.forget(scope, "a.md", revision) == {"path": "a.md", "deleted": True}
    assert not (memory_root / "global" / "a.md").exists()
    # A missing document is already absent, whatever expected_revision said.
    assert store.forget(scope, "a.md", revision) == {"path": "a.md", "already_absent": True}
    assert store.forget(scope, "no/such/dir.md", ABSENT) == {
        "path": "no/such/dir.md", "already_absent": True,
    }


@pytest.mark.parametrize("revision", ["", "ABSENT", "f" * 63, "F" * 64, "g" * 64, None, 1])
def test_malformed_expected_revision(store: Store, scope: Scope, revision: object) -> None:
    with pytest.raises(InvalidArgument):
        store.upsert(scope, "a.md", "x", revision)
    with pytest.raises(InvalidArgument):
        store.forget(scope, "a.md", revision)


def test_content_must_be_utf8(store: Store, scope: Scope, memory_root: Path) -> None:
    with pytest.raises(NotUtf8) as caught:
        store.upsert(scope, "a.md", b"ok \xff", ABSENT)
    assert "byte 3" in caught.value.message
    with pytest.raises(NotUtf8):
        store.upsert(scope, "a.md", "lone \udc80", ABSENT)
    with pytest.raises(InvalidArgument):
        store.upsert(scope, "a.md", 42, ABSENT)  # type: ignore[arg-type]
    assert not (memory_root / "global" / "a.md").exists()
    data = "nul\x00 cr\r\n 记忆 🧠".encode()
    store.upsert(scope, "a.md", data, ABSENT)
    assert (memory_root / "global" / "a.md").read_bytes() == data


def test_permissions(store: Store, scope: Scope, memory_root: Path) -> None:
    store.upsert(scope, "deep/er/a.md", "x", ABSENT)
    alice = resolve_scope(Identity("alice"), isolation=True)
    store.upsert(alice, "a.md", "x", ABSENT)
    assert _mode(memory_root) == 0o700
    for directory in ("global", "global/deep", "global/deep/er", "users", alice_dir(alice)):
        assert _mode(memory_root / directory) == 0o700, directory
    assert _mode(memory_root / "global/deep/er/a.md") == 0o600
    assert _mode(memory_root / alice_dir(alice) / "a.md") == 0o600


def alice_dir(scope: Scope) -> str:
    return "/".join(scope.directory)


def test_root_permissions_are_tightened(memory_root: Path) -> None:
    memory_root.mkdir(mode=0o755)
    memory_root.chmod(0o755)
    Store(memory_root).close()
    assert _mode(memory_root) == 0o700


def test_scopes_are_separate(store: Store) -> None:
    alice = resolve_scope(Identity("alice"), isolation=True)
    bob = resolve_scope(Identity("bob"), isolation=True)
    store.upsert(alice, "MEMORY.md", "alice secret plan", ABSENT)
    assert store.get(bob, "MEMORY.md")["exists"] is False
    assert store.get(GLOBAL, "MEMORY.md")["exists"] is False
    assert store.search(bob, "secret")["results"] == []
    assert store.search(GLOBAL, "secret")["results"] == []
    assert store.search(alice, "secret")["results"][0]["path"] == "MEMORY.md"


def test_directory_and_file_collisions(store: Store, scope: Scope) -> None:
    store.upsert(scope, "x.md/inner.md", "dir named like a document", ABSENT)
    with pytest.raises(InvalidPath) as is_dir:
        store.upsert(scope, "x.md", "x", ABSENT)
    assert "directory" in is_dir.value.reason
    with pytest.raises(InvalidPath):
        store.get(scope, "x.md")
    store.upsert(scope, "file.md", "x", ABSENT)
    with pytest.raises(InvalidPath) as is_file:
        store.upsert(scope, "file.md/child.md", "x", ABSENT)
    assert "file where a directory" in is_file.value.reason
    # Below a document no document can exist: reads and forgets say so plainly.
    assert store.get(scope, "file.md/child.md")["exists"] is False
    assert store.forget(scope, "file.md/child.md", ABSENT)["already_absent"] is True


def test_other_files_are_ignored(store: Store, scope: Scope, memory_root: Path) -> None:
    store.upsert(scope, "a.md", "term", ABSENT)
    (memory_root / "global" / "notes.txt").write_text("term")
    (memory_root / "global" / ".draft.md").write_text("term")
    (memory_root / "global" / ".git").mkdir()
    (memory_root / "global" / ".git" / "x.md").write_text("term")
    assert [r["path"] for r in store.search(scope, "term")["results"]] == ["a.md"]
    assert store.usage(scope).documents == 1


def test_stale_temps_are_removed_on_open_and_nothing_else(memory_root: Path) -> None:
    nested = memory_root / "global" / "projects"
    nested.mkdir(parents=True)
    keep = [nested / "a.md", nested / "amux-tmp-x.md", nested / ".other", memory_root / "x.txt"]
    for path in keep:
        path.write_text("keep")
    stale = [memory_root / "global" / ".amux-tmp-1", nested / ".amux-tmp-deadbeef"]
    for path in stale:
        path.write_text("partial")
    with Store(memory_root, exclusive=True) as store:
        assert store.removed_temps == 2
    assert all(path.exists() for path in keep)
    assert not any(path.exists() for path in stale)


def test_temps_of_a_live_exclusive_holder_are_left_alone(memory_root: Path) -> None:
    with Store(memory_root, exclusive=True):
        memory_root.joinpath("global").mkdir()
        in_flight = memory_root / "global" / ".amux-tmp-inflight"
        in_flight.write_text("being written")
        with Store(memory_root) as reader:
            assert reader.removed_temps == 0
        assert in_flight.exists()


def test_recent_revisions_never_vouch_for_other_bytes(memory_root: Path, scope: Scope) -> None:
    with Store(memory_root) as store:
        first = store.upsert(scope, "a.md", "ours\n", ABSENT)
        # Same size, changed by hand behind the store's back: the stale revision must fail.
        (memory_root / "global" / "a.md").write_text("hand\n")
        with pytest.raises(RevisionConflict) as caught:
            store.upsert(scope, "a.md", "next\n", first["revision"])
        assert caught.value.current_revision == revision_of(b"hand\n")
        store.upsert(scope, "a.md", "next\n", revision_of(b"hand\n"))


def test_list_is_bounded_and_ordered(store: Store, scope: Scope) -> None:
    for name in ("b.md", "a/x.md", "a-z.md", "c/d/e.md"):
        store.upsert(scope, name, name, ABSENT)
    listing = store.list(scope)
    assert [d["path"] for d in listing["documents"]] == ["a-z.md", "a/x.md", "b.md", "c/d/e.md"]
    assert listing["truncated"] is False
    first = listing["documents"][0]
    assert (first["bytes"], first["revision"]) == (6, revision_of(b"a-z.md"))
    assert first["modified_at"].endswith("Z")
    two = store.list(scope, limit=2)
    assert len(two["documents"]) == 2 and two["truncated"] is True
    rest = store.list(scope, limit=2, after=two["documents"][-1]["path"])  # the next page
    assert [d["path"] for d in rest["documents"]] == ["b.md", "c/d/e.md"]
    assert store.list(scope, after="a.md")["documents"][0]["path"] == "a/x.md"  # gone: still
    for bad in ("", 5):  # the place it held
        with pytest.raises(InvalidArgument):
            store.list(scope, after=bad)
    assert [d["path"] for d in store.list(scope, "c")["documents"]] == ["c/d/e.md"]
    assert store.list(scope, "b.md")["documents"] == []  # a document is not a folder
    assert store.list(scope, "missing")["documents"] == []
    for bad in (0, 1001, "5", True):
        with pytest.raises(InvalidArgument):
            store.list(scope, limit=bad)
