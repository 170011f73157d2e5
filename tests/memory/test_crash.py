"""Crash consistency with real processes (SPEC §2 "Write" and "Startup").

A child process (`store_child.py`) owns the root exclusively and makes conditional
upserts and forgets whose contents are a pure function of (path, sequence number),
printing every acknowledged one. The parent SIGKILLs it — at random moments and at
fixed points inside a write — and then checks, with the root reopened, that:

* the exclusive lock was released by the kernel (reopening succeeds);
* every document holds exactly its last acknowledged state, or the one state that
  was in flight (at most one document can be in flight): never a torn, mixed or
  older state, and no acknowledged write is lost;
* `get` reports `revision` = SHA-256 of the bytes on disk and pages back exactly
  those bytes;
* reopening removes every `.amux-tmp-*` leftover (and reports how many), and no
  file other than the documents, their directories, the lock and temps ever appears.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import stat
import time
from pathlib import Path

import pytest

from amux.memory import GLOBAL, Store
from amux.memory.history import KEEP_PREFIX, History
from amux.memory.revision import ABSENT
from tests.memory.childproc import spawned
from tests.memory.store_child import DOCS, content_of, revision_at

LOCK_FILE = ".amux-root.lock"
TEMP_PREFIX = ".amux-tmp-"
DOC_FILES = {f"global/{doc}" for doc in DOCS}
DOC_DIRS = {"global"} | {
    "/".join(("global", *doc.split("/")[:i])) for doc in DOCS for i in range(1, doc.count("/") + 1)
}


def _walk(root: Path, kept: bool = False) -> tuple[set[str], set[str], list[str]]:
    """(directories, non-temp files, temp files) below root, relative, never following links;
    with `kept`, the earlier versions memory history keeps beside documents are left out."""
    dirs: set[str] = set()
    files: set[str] = set()
    temps: list[str] = []
    for here, subdirs, names in os.walk(root, followlinks=False):
        rel = os.path.relpath(here, root)
        prefix = "" if rel == "." else rel + "/"
        dirs.update(prefix + d for d in subdirs)
        for name in names:
            if name.startswith(TEMP_PREFIX):
                temps.append(prefix + name)
            elif kept and name.startswith(KEEP_PREFIX):
                continue
            else:
                files.add(prefix + name)
    return dirs, files, temps


def _read_paged(store: Store, path: str) -> tuple[bool, str, bytes]:
    """(exists, revision, whole content) through `get`, following `next_offset`."""
    page = store.get(GLOBAL, path)
    exists, revision = page["exists"], page["revision"]
    content = page["content"].encode()
    while page["truncated"]:
        page = store.get(GLOBAL, path, offset=page["next_offset"])
        assert page["revision"] == revision, f"{path} changed while paging"
        content += page["content"].encode()
    return exists, revision, content


def _apply_acks(lines: list[str], known: dict[str, int]) -> int:
    """Fold the child's acknowledgements into `known`; each must be the next state."""
    acks = 0
    for line in lines:
        if not line.startswith("ack "):
            continue
        _, path, seq_text, revision = line.split(" ")
        seq = int(seq_text)
        assert seq == known[path] + 1, f"ack out of order for {path}: {line}"
        expected = revision_at(path, seq)
        assert revision == ("deleted" if expected == ABSENT else expected), line
        known[path] = seq
        acks += 1
    return acks


def _verify(root: Path, known: dict[str, int], kept: bool = False,
            ) -> tuple[list[str], int, list[str]]:
    """Check the root after a crash; advance `known` by the in-flight write if it landed.

    Returns (documents found one step past their last ack, temps removed on reopen,
    the temps' paths).
    """
    dirs, files, temps = _walk(root, kept)
    assert dirs <= DOC_DIRS, f"unexpected directories: {sorted(dirs - DOC_DIRS)}"
    assert files <= DOC_FILES | {LOCK_FILE}, f"unexpected files: {sorted(files - DOC_FILES)}"
    for temp in temps:
        assert temp.rsplit("/", 1)[0] in DOC_DIRS, f"temp outside a document dir: {temp}"

    with Store(root, exclusive=True) as store:  # the dead child's flock is gone
        assert store.removed_temps == len(temps), (store.removed_temps, temps)
        assert _walk(root)[2] == [], "a .amux-tmp-* file survived reopening"
        advanced: list[str] = []
        for path in DOCS:
            on_disk = root / "global" / path
            data = on_disk.read_bytes() if os.path.lexists(on_disk) else None
            if data is not None:
                st = on_disk.lstat()
                assert stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o600, path
            seq = known[path]
            if data == content_of(path, seq):
                pass
            elif data == content_of(path, seq + 1):
                advanced.append(path)
                known[path] = seq + 1
            else:
                head = None if data is None else data[:60]
                raise AssertionError(
                    f"{path}: neither acknowledged seq {seq} nor in-flight seq {seq + 1}; "
                    f"found {None if data is None else len(data)} bytes starting {head!r}"
                )
            exists, revision, content = _read_paged(store, path)
            assert exists == (data is not None), path
            if data is None:
                assert revision == ABSENT
            else:
                assert revision == hashlib.sha256(data).hexdigest(), path
                assert content == data, f"{path}: get() pages differ from the file"
        assert len(advanced) <= 1, f"more than one write in flight: {advanced}"
    for directory in _walk(root)[0]:
        assert stat.S_IMODE((root / directory).lstat().st_mode) == 0o700, directory
    return advanced, len(temps), temps


@pytest.mark.slow
def test_sigkill_at_random_moments_keeps_every_acknowledged_write(tmp_path: Path) -> None:
    rng = random.Random(0x5EED_2024)
    root = tmp_path / "memory"
    known = dict.fromkeys(DOCS, 0)
    kills = acks = landed_unacked = temps_removed = 0
    while kills < 60:
        with spawned("write", str(root), json.dumps(known), str(rng.randrange(2**32))) as child:
            if kills % 10 == 9:
                # now and then, kill during start-up (lock, temp clean-up, first write)
                time.sleep(rng.uniform(0.0, 0.3))
            else:
                ready = child.expect("ready ")
                assert ready == "ready 0", "the previous reopen left temps for the child"
                child.expect("ack ")  # every run makes progress, however slow the disk
                time.sleep(rng.uniform(0.0, 0.06))
            child.kill()
        kills += 1
        acks += _apply_acks(child.lines, known)
        advanced, removed, _ = _verify(root, known)
        landed_unacked += len(advanced)
        temps_removed += removed
    # the run did real work: many acknowledged writes, both big and tiny big.md, deletes
    assert acks >= 54, acks
    assert known["big.md"] >= 2
    assert known["ephemeral/gone.md"] >= 3  # deleted at least once
    print(f"kills={kills} acks={acks} landed-unacked={landed_unacked} temps={temps_removed}")


@pytest.mark.slow
def test_sigkill_loses_no_acknowledged_revision_from_history(tmp_path: Path) -> None:
    """Issue 24: after a SIGKILL at any moment, every revision a client was told was saved
    is the document's content or in its history, which reopens and reads back."""
    rng = random.Random(0x415_7024)
    root, history_dir = tmp_path / "memory", tmp_path / "history"
    known = dict.fromkeys(DOCS, 0)
    acknowledged: set[tuple[str, int]] = set()
    for kill in range(30):
        with spawned("history", str(root), str(history_dir), json.dumps(known),
                     str(rng.randrange(2**32))) as child:
            if kill % 10 != 9:  # now and then during start-up
                child.expect("ack ")
            time.sleep(rng.uniform(0.0, 0.08))
            child.kill()
        for line in child.lines:
            if line.startswith("ack "):
                _, path, seq, _ = line.split(" ")
                acknowledged.add((path, int(seq)))
        _apply_acks(child.lines, known)
        _verify(root, known, kept=True)
        history = History(history_dir)
        with Store(root, exclusive=True, history=history) as store:
            store.catch_up_history()
            held = {(change["path"], change["revision"])
                    for change in store.log(GLOBAL, limit=10_000)["changes"]}
            missing = []
            for path, seq in sorted(acknowledged):
                data = content_of(path, seq)
                on_disk = root / "global" / path
                if data is None or (on_disk.exists() and on_disk.read_bytes() == data):
                    continue
                if (path, revision_at(path, seq)) not in held:
                    missing.append((path, seq))
            assert not missing, f"acknowledged, then neither on disk nor in history: {missing}"
            newest = {path: seq for path, seq in sorted(acknowledged)}  # read back whole
            for path, seq in newest.items():
                data = content_of(path, seq)
                if data is not None:
                    assert store.version(GLOBAL, path, revision_at(path, seq)) == data
            history.close()
        assert _walk(root) == _walk(root, kept=True), "a kept version outlived the catch-up"
    assert len(acknowledged) >= 30, len(acknowledged)
    print(f"acknowledged={len(acknowledged)}")


@pytest.mark.slow
@pytest.mark.parametrize(
    ("point", "count", "temps", "lands"),
    [
        ("mid_write", 4, 1, False),  # temp half written: old content stays, temp removed
        ("before_rename", 4, 1, False),  # temp complete and fsynced, not yet renamed
        ("after_rename", 4, 0, True),  # renamed, dir not fsynced, not acknowledged
        ("after_unlink", 2, 0, True),  # forget unlinked, not acknowledged
    ],
)
def test_sigkill_at_fixed_points_inside_a_write(
    tmp_path: Path, point: str, count: int, temps: int, lands: bool
) -> None:
    root = tmp_path / "memory"
    known = dict.fromkeys(DOCS, 0)
    with spawned("write", str(root), json.dumps(known), "7", point, str(count)) as child:
        child.expect(f"at {point}")
        child.kill()
    _apply_acks(child.lines, known)
    before = dict(known)
    _, _, temp_paths = _walk(root)
    temp_bytes = [(root / temp).read_bytes() for temp in temp_paths]
    advanced, removed, _ = _verify(root, known)

    assert removed == temps
    assert bool(advanced) == lands
    if point == "after_unlink":
        assert advanced == ["ephemeral/gone.md"]
        assert not (root / "global/ephemeral/gone.md").exists()
    if temps:
        # the leftover temp really was the in-flight write: the next state of a
        # document in that directory, complete or cut in half
        (data,) = temp_bytes
        folder = temp_paths[0].rsplit("/", 1)[0]
        candidates = [
            content_of(doc, before[doc] + 1)
            for doc in DOCS
            if f"global/{doc}".rsplit("/", 1)[0] == folder
        ]
        if point == "mid_write":
            assert any(c and len(data) == len(c) // 2 and c.startswith(data) for c in candidates)
        else:
            assert data in candidates

    # the store keeps working from the recovered state: a conditional write succeeds
    with Store(root, exclusive=True) as store:
        for doc in DOCS:
            store.upsert(GLOBAL, doc, b"after recovery\n", revision_at(doc, known[doc]))


def test_reopen_removes_only_the_stores_own_temps(tmp_path: Path) -> None:
    root = tmp_path / "memory"
    with Store(root) as store:
        store.upsert(GLOBAL, "a/b/doc.md", "keep\n", ABSENT)
    nested = root / "global/a/b"
    leftovers = [
        root / f"{TEMP_PREFIX}x",
        root / f"global/{TEMP_PREFIX}y",
        nested / f"{TEMP_PREFIX}z",
    ]
    for path in leftovers:
        path.write_bytes(b"half a write")
    keep = [
        nested / ".notes",  # another dot-file
        nested / "amux-tmp-1",  # no leading dot
        nested / "x.amux-tmp-2",
        root / "global/readme.txt",
    ]
    for path in keep:
        path.write_bytes(b"not ours")
    (nested / f"{TEMP_PREFIX}dir").mkdir()  # a directory is never a temp file
    (nested / f"{TEMP_PREFIX}link").symlink_to(root / "global/readme.txt")

    with Store(root, exclusive=True) as store:
        assert store.removed_temps == len(leftovers)
        assert store.get(GLOBAL, "a/b/doc.md")["content"] == "keep\n"
    assert not any(path.exists() for path in leftovers)
    assert all(path.read_bytes() == b"not ours" for path in keep)
    assert (nested / f"{TEMP_PREFIX}dir").is_dir()
    assert (nested / f"{TEMP_PREFIX}link").is_symlink()
    with Store(root, exclusive=True) as store:
        assert store.removed_temps == 0


def test_temps_of_a_live_holder_survive_a_non_exclusive_open(tmp_path: Path) -> None:
    root = tmp_path / "memory"
    root.mkdir()
    with spawned("hold", str(root)) as holder:
        holder.expect("ready ")
        (root / "global").mkdir(mode=0o700)
        temp = root / f"global/{TEMP_PREFIX}inflight"
        temp.write_bytes(b"the live Hub may be writing this")
        with Store(root) as reader:
            assert reader.removed_temps == 0
        assert temp.exists(), "a non-exclusive open removed a live holder's temp file"
        holder.kill()
    with Store(root) as reader:  # nobody holds the root now: clean-up is safe
        assert reader.removed_temps == 1
    assert not temp.exists()
