"""Concurrency (SPEC §2): conditional writes from many threads, one Hub per root.

* Many threads doing read-modify-write on one document through one `Store` lose no
  update: every increment lands exactly once (the revision check and the write
  are atomic under the scope's write lock).
* The exclusive root lock is really exclusive across processes, fails with a clear
  `RootLocked` naming the root and the holder, and is released by the kernel when
  the holder is SIGKILLed.
* Writers to two different scopes run in parallel without touching each other.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from amux.errors import RevisionConflict, RootLocked
from amux.memory import GLOBAL, Identity, Scope, Store, resolve_scope
from amux.memory.revision import ABSENT, revision_of
from amux.memory.scope import principal_digest
from tests.memory.childproc import spawned

THREADS = 8
INCREMENTS = 100


def _increment(
    store: Store, scope: Scope, path: str, start: threading.Barrier
) -> tuple[list[int], int]:
    """Add one to the counter `INCREMENTS` times; returns (values written, conflicts seen)."""
    written: list[int] = []
    conflicts = 0
    start.wait()
    while len(written) < INCREMENTS:
        page = store.get(scope, path)
        value = int(page["content"]) + 1
        try:
            result = store.upsert(scope, path, f"{value}\n", page["revision"])
        except RevisionConflict as conflict:
            conflicts += 1
            assert conflict.current_revision != page["revision"]
            assert len(conflict.current_revision) == 64
            continue
        assert result == {
            "path": path,
            "revision": revision_of(f"{value}\n".encode()),
            "created": False,
        }
        written.append(value)
    return written, conflicts


def _run_counters(store: Store, scope: Scope, path: str, threads: int) -> tuple[list[int], int]:
    store.upsert(scope, path, "0\n", ABSENT)
    start = threading.Barrier(threads)
    with ThreadPoolExecutor(threads) as pool:
        futures = [pool.submit(_increment, store, scope, path, start) for _ in range(threads)]
        outcomes = [future.result(timeout=120) for future in futures]
    values = sorted(v for written, _ in outcomes for v in written)
    return values, sum(conflicts for _, conflicts in outcomes)


def test_threads_doing_read_modify_write_lose_no_update(store: Store, scope: Scope) -> None:
    values, conflicts = _run_counters(store, scope, "counter.md", THREADS)
    total = THREADS * INCREMENTS
    # every value 1..800 was written exactly once: no lost and no duplicated update
    assert values == list(range(1, total + 1))
    page = store.get(scope, "counter.md")
    assert page["content"] == f"{total}\n"
    assert page["revision"] == revision_of(f"{total}\n".encode())
    assert store.usage(scope).documents == 1
    print(f"revision conflicts retried: {conflicts}")


def test_a_second_process_gets_root_locked_until_the_holder_is_killed(tmp_path: Path) -> None:
    root = tmp_path / "memory"
    with spawned("hold", str(root)) as holder:
        ready = holder.expect("ready ")
        assert ready == f"ready {holder.proc.pid}"
        with pytest.raises(RootLocked) as caught:
            Store(root, exclusive=True)
        message = str(caught.value)
        assert str(root) in message
        assert f"pid {holder.proc.pid}" in message
        assert "already in use" in message
        assert caught.value.code == "internal"
        # a non-exclusive open (a reader, not a Hub) is still allowed meanwhile
        with Store(root) as reader:
            assert reader.get(GLOBAL, "x.md")["exists"] is False
        holder.kill()
    with Store(root, exclusive=True) as hub:  # the kernel dropped the dead holder's flock
        hub.upsert(GLOBAL, "x.md", "mine now\n", ABSENT)
        assert (root / ".amux-root.lock").read_text() == f"{os.getpid()}\n"
        # and now it is ours: another process is refused in turn
        with spawned("hold", str(root)) as second:
            with pytest.raises(AssertionError, match="RootLocked"):
                second.expect("ready ")
            assert second.proc.returncode == 1


def test_two_exclusive_stores_in_one_process_conflict_too(memory_root: Path) -> None:
    with Store(memory_root, exclusive=True):
        with pytest.raises(RootLocked, match=str(memory_root)):
            Store(memory_root, exclusive=True)
        with Store(memory_root) as reader:  # opens and closes its own probe of the lock
            assert reader.removed_temps == 0
        # neither the refused opener nor the reader released the holder's lock
        with (
            spawned("hold", str(memory_root)) as other,
            pytest.raises(AssertionError, match="RootLocked"),
        ):
            other.expect("ready ")
    with Store(memory_root, exclusive=True):  # released by close()
        pass


def test_writers_to_two_scopes_in_parallel_do_not_interfere(
    store: Store, memory_root: Path
) -> None:
    alice = resolve_scope(Identity("alice"), isolation=True)
    scopes = {"global": GLOBAL, "alice": alice}
    rounds = 60
    start = threading.Barrier(2 * 4 + 2)

    def writer(name: str) -> None:
        """One writer per scope; its own model of every revision must never be wrong."""
        scope = scopes[name]
        revisions = {f"shared/doc{i}.md": ABSENT for i in range(5)}
        start.wait()
        for n in range(rounds):
            for path, expected in revisions.items():
                content = f"{name} owns {path} round {n}\nterm-{name}\n"
                revisions[path] = store.upsert(scope, path, content, expected)["revision"]
        for path, expected in revisions.items():
            if path.endswith("doc4.md"):
                assert store.forget(scope, path, expected) == {"path": path, "deleted": True}

    def counter(name: str) -> list[int]:
        written, _ = _increment(store, scopes[name], "counter.md", start)
        return written

    for scope in scopes.values():
        store.upsert(scope, "counter.md", "0\n", ABSENT)
    with ThreadPoolExecutor(10) as pool:
        writers = [pool.submit(writer, name) for name in scopes]
        counters = {name: [pool.submit(counter, name) for _ in range(4)] for name in scopes}
        for future in writers:
            future.result(timeout=120)
        for name, futures in counters.items():
            values = sorted(v for future in futures for v in future.result(timeout=120))
            assert values == list(range(1, 4 * INCREMENTS + 1)), name

    for name, scope in scopes.items():
        other = "alice" if name == "global" else "global"
        assert store.get(scope, "counter.md")["content"] == f"{4 * INCREMENTS}\n"
        for i in range(4):
            page = store.get(scope, f"shared/doc{i}.md")
            assert page["content"] == f"{name} owns shared/doc{i}.md round {rounds - 1}\n" + (
                f"term-{name}\n"
            )
        assert store.get(scope, "shared/doc4.md")["exists"] is False
        assert store.search(scope, f"term-{other}")["results"] == []
        found = store.search(scope, f"term-{name}", limit=20)
        assert sorted(r["path"] for r in found["results"]) == [
            f"shared/doc{i}.md" for i in range(4)
        ]
        usage = store.usage(scope)
        assert usage.documents == 5
    # and the files are where the scopes say, nowhere else
    for directory in (memory_root / "global", memory_root / "users" / principal_digest("alice")):
        assert sorted(p.name for p in (directory / "shared").iterdir()) == [
            f"doc{i}.md" for i in range(4)
        ]
    entries = sorted(p.name for p in memory_root.iterdir() if not p.name.startswith("."))
    assert entries == ["global", "users"]
