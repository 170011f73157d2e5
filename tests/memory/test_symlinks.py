"""Symlink and special-file attacks (SPEC §2: "A symlink anywhere from the memory root
down to the document (file or directory) → refused. Search never follows symlinks.").

Someone with write access to the scope directory (an offline edit, a confused agent
with shell access) plants links pointing outside the memory root. Every operation
on a path through such a link must be refused with `invalid_path` whose reason
says "symlink", nothing outside may be read, changed or created, and search must
skip the link without reporting anything from the outside or calling itself
incomplete. FIFOs named like documents must neither hang a read nor be searched.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from amux.errors import InvalidPath
from amux.memory import GLOBAL, Identity, Scope, Store, resolve_scope
from amux.memory.revision import ABSENT, revision_of
from amux.memory.scope import principal_digest

SECRET = b"# secret\nouterspaceterm lives only outside the memory root\n"
DIR_DOC = b"# dir doc\nouterspaceterm in the outside directory too\n"
NORMAL = "# normal\nan ordinary document inside the scope\n"


def _snapshot(top: Path) -> dict[str, tuple[str, bytes | None]]:
    """Every entry below `top` (not following links) with its kind and file bytes."""
    found: dict[str, tuple[str, bytes | None]] = {}
    for here, dirs, files in os.walk(top, followlinks=False):
        for name in dirs + files:
            path = Path(here, name)
            rel = str(path.relative_to(top))
            if path.is_symlink():
                found[rel] = ("link", os.readlink(path).encode())
            elif path.is_dir():
                found[rel] = ("dir", None)
            else:
                found[rel] = ("file", path.read_bytes())
    return found


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A directory beside the memory root: secret.md, dir/x.md (and dir/secret.md)."""
    top = tmp_path / "outside"
    (top / "dir").mkdir(parents=True)
    (top / "secret.md").write_bytes(SECRET)
    (top / "dir" / "x.md").write_bytes(DIR_DOC)
    (top / "dir" / "secret.md").write_bytes(SECRET)
    return top


@pytest.fixture
def guarded(outside: Path, store: Store, memory_root: Path) -> Iterator[Path]:
    """The outside tree must be byte-for-byte unchanged at the end of the test."""
    before = _snapshot(outside)
    store.upsert(GLOBAL, "normal.md", NORMAL, ABSENT)
    yield outside
    assert _snapshot(outside) == before, "something outside the memory root changed"


def _refused(call: Callable[[], Any]) -> InvalidPath:
    with pytest.raises(InvalidPath) as caught:
        call()
    assert "symlink" in caught.value.reason, caught.value.reason
    assert caught.value.code == "invalid_path"
    return caught.value


def _all_operations_refused(store: Store, scope: Scope, path: str, current: bytes | None) -> None:
    """get, upsert (create and replace) and forget on `path` are all refused.

    `current` is what a store that followed the link would see there; using its
    revision makes the write and the delete succeed on a naive implementation.
    """
    revisions = [ABSENT] + ([] if current is None else [revision_of(current)])
    _refused(lambda: store.get(scope, path))
    _refused(lambda: store.get(scope, path, start_line=1, end_line=1))
    for revision in revisions:
        _refused(lambda r=revision: store.upsert(scope, path, "# overwritten\n", r))
        _refused(lambda r=revision: store.forget(scope, path, r))


def _search_skips(store: Store, scope: Scope, *terms: str, scanned: int = 1) -> None:
    for term in ("outerspaceterm", *terms):
        found = store.search(scope, term, limit=20)
        assert found["results"] == [], found
        assert found["incomplete"] is False
        assert found["scanned_files"] == scanned
    normal = store.search(scope, "ordinary")
    assert [r["path"] for r in normal["results"]] == ["normal.md"]


# -- (i) a symlinked file ---------------------------------------------------------------


def test_symlinked_file_is_refused_and_skipped(
    store: Store, scope: Scope, memory_root: Path, guarded: Path
) -> None:
    (memory_root / "global" / "evil.md").symlink_to(guarded / "secret.md")
    _all_operations_refused(store, scope, "evil.md", SECRET)
    assert (memory_root / "global" / "evil.md").is_symlink()  # forget did not remove it
    _search_skips(store, scope, "evil")  # not even a path hit on the link's name


def test_symlinked_file_under_a_real_subdirectory(
    store: Store, scope: Scope, memory_root: Path, guarded: Path
) -> None:
    (memory_root / "global" / "sub").mkdir()
    (memory_root / "global" / "sub" / "evil.md").symlink_to(guarded / "secret.md")
    _all_operations_refused(store, scope, "sub/evil.md", SECRET)
    _search_skips(store, scope, "evil")
    _refused(lambda: store.search(scope, "outerspaceterm", path_prefix="sub/evil.md"))


def test_relative_symlink_escaping_with_dotdot(
    store: Store, scope: Scope, memory_root: Path, guarded: Path
) -> None:
    (memory_root / "global" / "rel.md").symlink_to(Path("../../outside/secret.md"))
    assert (memory_root / "global" / "rel.md").read_bytes() == SECRET  # the link works
    _all_operations_refused(store, scope, "rel.md", SECRET)
    _search_skips(store, scope, "rel")


# -- (ii) a symlinked directory ---------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "current"),
    [
        ("link/x.md", DIR_DOC),
        ("link/secret.md", SECRET),
        ("link/new.md", None),
        ("link/deeper/new.md", None),
    ],
)
def test_symlinked_directory_is_refused_and_skipped(
    store: Store, scope: Scope, memory_root: Path, guarded: Path, path: str, current: bytes | None
) -> None:
    (memory_root / "global" / "link").symlink_to(guarded / "dir", target_is_directory=True)
    _all_operations_refused(store, scope, path, current)
    _search_skips(store, scope, "link", "x.md")
    _refused(lambda: store.search(scope, "outerspaceterm", path_prefix="link"))
    _refused(lambda: store.search(scope, "outerspaceterm", path_prefix="link/"))


# -- (iii) the scope directory itself ---------------------------------------------------


def _alice() -> Scope:
    return resolve_scope(Identity("alice"), isolation=True)


@pytest.mark.parametrize(
    ("scope_of", "link_at"),
    [
        (lambda: GLOBAL, ("global",)),
        (_alice, ("users",)),
        (_alice, ("users", principal_digest("alice"))),
    ],
    ids=["global", "users", "users-digest"],
)
def test_symlinked_scope_directory_is_refused(
    memory_root: Path, outside: Path, scope_of: Callable[[], Scope], link_at: tuple[str, ...]
) -> None:
    scope = scope_of()
    memory_root.mkdir()
    link = memory_root.joinpath(*link_at)
    link.parent.mkdir(exist_ok=True)
    # `users` -> outside means the scope would be outside/<digest>: make that exist too
    target = outside / "dir"
    if link_at == ("users",):
        target = outside
        (outside / principal_digest("alice")).symlink_to(outside / "dir")
    link.symlink_to(target, target_is_directory=True)
    before = _snapshot(outside)
    with Store(memory_root) as store:
        for path, current in [
            ("x.md", DIR_DOC),
            ("secret.md", SECRET),
            ("new.md", None),
            ("a/new.md", None),
        ]:
            _all_operations_refused(store, scope, path, current)
        # a whole-scope search may refuse or find nothing, but never reads outside
        try:
            found = store.search(scope, "outerspaceterm")
        except InvalidPath as refusal:
            assert "symlink" in refusal.reason
        else:
            assert found["results"] == []
            assert found["incomplete"] is False
        with pytest.raises(InvalidPath, match="symlink"):
            store.usage(scope)
    assert _snapshot(outside) == before
    assert link.is_symlink()


# -- (iv) a symlink in an intermediate directory ----------------------------------------


@pytest.mark.parametrize(
    ("path", "current"),
    [
        ("a/b/secret.md", SECRET),
        ("a/b/dir/x.md", DIR_DOC),
        ("a/b/new.md", None),
        ("a/b/c/new.md", None),  # must not mkdir outside/c
    ],
)
def test_symlink_in_an_intermediate_directory(
    store: Store, scope: Scope, memory_root: Path, guarded: Path, path: str, current: bytes | None
) -> None:
    (memory_root / "global" / "a").mkdir()
    (memory_root / "global" / "a" / "b").symlink_to(guarded, target_is_directory=True)
    _all_operations_refused(store, scope, path, current)
    _search_skips(store, scope, "b")
    for prefix in ("a/b", "a/b/", "a/b/dir"):
        _refused(lambda p=prefix: store.search(scope, "outerspaceterm", path_prefix=p))
    # the real directory above the link still searches fine (and skips the link)
    assert store.search(scope, "outerspaceterm", path_prefix="a")["results"] == []


# -- dangling links, loops, hard links, stale-temp clean-up -----------------------------


def test_dangling_symlinks_are_refused_and_never_create_their_target(
    store: Store, scope: Scope, memory_root: Path, guarded: Path
) -> None:
    (memory_root / "global" / "dangling.md").symlink_to(guarded / "missing.md")
    (memory_root / "global" / "ddir").symlink_to(guarded / "missing-dir", target_is_directory=True)
    (memory_root / "global" / "loop.md").symlink_to("loop.md")
    (memory_root / "global" / "loopdir").symlink_to("loopdir")
    for path in ("dangling.md", "ddir/new.md", "ddir/sub/new.md", "loop.md", "loopdir/x.md"):
        _all_operations_refused(store, scope, path, None)
    _search_skips(store, scope, "dangling", "loop")
    assert not (guarded / "missing.md").exists()
    assert not (guarded / "missing-dir").exists()


def test_upsert_replaces_a_hard_link_instead_of_writing_through_it(
    store: Store, scope: Scope, memory_root: Path, guarded: Path
) -> None:
    # a hard link cannot be told from a document, but a write must never modify
    # the other name's bytes in place: temp-and-rename replaces the directory entry
    os.link(guarded / "dir" / "x.md", memory_root / "global" / "hard.md")
    page = store.get(scope, "hard.md")
    store.upsert(scope, "hard.md", "# replaced\n", page["revision"])
    assert store.get(scope, "hard.md")["content"] == "# replaced\n"
    assert (guarded / "dir" / "x.md").read_bytes() == DIR_DOC


def test_stale_temp_clean_up_never_follows_a_symlinked_directory(
    memory_root: Path, outside: Path
) -> None:
    (outside / "dir" / ".amux-tmp-notours").write_bytes(b"someone else's file")
    with Store(memory_root) as store:
        store.upsert(GLOBAL, "normal.md", NORMAL, ABSENT)
    (memory_root / "global" / "link").symlink_to(outside / "dir", target_is_directory=True)
    (memory_root / "users").symlink_to(outside, target_is_directory=True)
    with Store(memory_root, exclusive=True) as store:
        assert store.removed_temps == 0
    assert (outside / "dir" / ".amux-tmp-notours").read_bytes() == b"someone else's file"


# -- FIFOs ------------------------------------------------------------------------------


def _finishes(call: Callable[[], Any], fifo: Path, timeout: float = 10.0) -> Any:
    """Run `call` in a thread; if it blocks (opened the FIFO for a blocking read), free it."""
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["value"] = call()
        except BaseException as exc:
            outcome["error"] = exc

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(timeout)
    if worker.is_alive():
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)  # unblocks the reader
        os.close(fd)
        worker.join(timeout)
        raise AssertionError(f"operation on FIFO {fifo.name} hung")
    if "error" in outcome:
        raise outcome["error"]
    return outcome.get("value")


@pytest.mark.parametrize("path", ["x.md", "deep/er/x.md", "MEMORY.md"])
def test_fifo_named_like_a_document(
    store: Store, scope: Scope, memory_root: Path, path: str
) -> None:
    store.upsert(scope, "normal.md", NORMAL, ABSENT)
    fifo = memory_root / "global" / path
    fifo.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(fifo)
    for call in (
        lambda: store.get(scope, path),
        lambda: store.upsert(scope, path, "# replaced\n", ABSENT),
        lambda: store.forget(scope, path, ABSENT),
    ):
        with pytest.raises(InvalidPath) as caught:
            _finishes(call, fifo)
        assert "regular file" in caught.value.reason
    assert fifo.is_fifo()
    found = _finishes(lambda: store.search(scope, "x ordinary memory", limit=20), fifo)
    assert [r["path"] for r in found["results"]] == ["normal.md"]
    assert found["scanned_files"] == 1
    assert found["incomplete"] is False
    assert store.usage(scope).documents == 1


# -- races: an entry swapped for a symlink between listing and opening ------------------


def _swap_after_listing(
    monkeypatch: pytest.MonkeyPatch, directory: Path, name: str, target: Path
) -> None:
    """The first time `directory` is listed, replace `name` in it by a symlink to `target`.

    This is what a concurrent offline edit can do between `scandir` and `openat`.
    """
    real_scandir = os.scandir
    swapped = False

    def scandir(fd: Any) -> Any:
        nonlocal swapped
        if swapped or not isinstance(fd, int):
            return real_scandir(fd)
        if not os.path.samestat(os.fstat(fd), directory.stat()):
            return real_scandir(fd)
        with real_scandir(fd) as listing:
            entries = list(listing)
        swapped = True
        os.rename(directory / name, directory / f"{name}-moved")
        os.symlink(target, directory / name)
        return contextlib.nullcontext(entries)

    monkeypatch.setattr(os, "scandir", scandir)


@pytest.mark.parametrize("swapped", ["sub", "evil.md"])
def test_search_skips_an_entry_swapped_for_a_symlink_after_listing(
    store: Store,
    scope: Scope,
    memory_root: Path,
    guarded: Path,
    monkeypatch: pytest.MonkeyPatch,
    swapped: str,
) -> None:
    store.upsert(scope, "sub/inner.md", "# inner\nordinary too\n", ABSENT)
    store.upsert(scope, "evil.md", "# evil\nordinary as well\n", ABSENT)
    target = guarded / ("dir" if swapped == "sub" else "secret.md")
    _swap_after_listing(monkeypatch, memory_root / "global", swapped, target)
    found = store.search(scope, "outerspaceterm ordinary", limit=20)
    paths = [r["path"] for r in found["results"]]
    assert all("outerspaceterm" not in r["matched_terms"] for r in found["results"]), paths
    assert "normal.md" in paths


def test_upsert_is_not_refused_because_another_entry_became_a_symlink(
    store: Store,
    scope: Scope,
    memory_root: Path,
    guarded: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the write re-counts the scope's usage by walking it; a directory elsewhere in
    # the scope turning into a symlink meanwhile must not make this write fail
    store.upsert(scope, "sub/inner.md", "# inner\n", ABSENT)
    fresh = Store(memory_root)  # no cached usage: the next write walks the scope
    try:
        _swap_after_listing(monkeypatch, memory_root / "global", "sub", guarded / "dir")
        result = fresh.upsert(scope, "other.md", "# other\n", ABSENT)
    finally:
        fresh.close()
    assert result["created"] is True
