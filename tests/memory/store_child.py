"""Child process for the crash and lock tests: a real Store owner the parent can SIGKILL.

Run as a script (`python store_child.py MODE ROOT [ARGS]`); the parent imports the
content model (`DOCS`, `content_of`, `revision_at`) so both sides agree on what every
document must contain at every sequence number.

Modes:

    hold ROOT
        Open `Store(ROOT, exclusive=True)`, print `ready <pid>` and block forever.

    write ROOT STATE_JSON SEED [CRASH_POINT COUNT]
    history ROOT HISTORY STATE_JSON SEED
        `write` (no crash point) with memory history kept in HISTORY, as the Hub keeps it.
        Open `Store(ROOT, exclusive=True)`, print `ready <removed_temps>`, then loop:
        pick a document (seeded), move it from sequence n (STATE_JSON gives the
        starting n of every document) to n + 1 with a *conditional* upsert or forget
        whose expected revision the child computes from the model alone (so any
        divergence between disk and model fails loudly with RevisionConflict), and
        after the call returns print `ack <path> <n+1> <revision|deleted>`.
        With CRASH_POINT the COUNT-th `write`/`rename`/`unlink` of the store is
        intercepted: `at <point>` is printed and the child blocks until killed.
        `mid_write` writes only the first half of the temp file's bytes;
        `before_rename` blocks after the temp file is complete and fsynced;
        `after_rename` and `after_unlink` block right after the directory entry
        changed, before the directory fsync and before the acknowledgement.
"""

from __future__ import annotations

import json
import os
import random
import sys
import threading

DOCS = (
    "MEMORY.md",
    "big.md",
    "notes/deep/nested/topic.md",
    "projects/p/tiny.md",
    "ephemeral/gone.md",
)
"""The documents the writer cycles through: entry, ~60 KiB/tiny, nested, tiny, deleted."""

DELETED_EVERY = 3
"""`ephemeral/gone.md` is absent at every sequence number divisible by this."""


def content_of(path: str, seq: int) -> bytes | None:
    """What `path` holds at sequence number `seq` (None: absent). Seq 0 is always absent."""
    if seq == 0 or (path == "ephemeral/gone.md" and seq % DELETED_EVERY == 0):
        return None
    line = f"doc {path} seq {seq}\n"
    if path == "MEMORY.md":
        repeat = seq % 5 + 1  # well inside the 2 KiB / 64 line entry limit
    elif path == "big.md":
        repeat = 61_440 // len(line) if seq % 2 else 1  # ~60 KiB, then one line
    elif path == "notes/deep/nested/topic.md":
        repeat = (seq * 37) % 400 + 1  # up to ~16 KiB
    elif path == "projects/p/tiny.md":
        repeat = 1
    else:
        repeat = seq % 50 + 1
    return (line * repeat).encode()


def revision_at(path: str, seq: int) -> str:
    from amux.memory.revision import ABSENT, revision_of

    data = content_of(path, seq)
    return ABSENT if data is None else revision_of(data)


def _say(text: str) -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def _block_forever() -> None:
    threading.Event().wait()


def _install_crash_point(point: str, count: int) -> None:
    """Intercept the `count`-th store call of the kind `point` names (see module doc)."""
    from amux import durable

    seen = 0

    def due() -> bool:
        nonlocal seen
        seen += 1
        return seen == count

    real_write, real_rename, real_unlink = os.write, os.rename, os.unlink

    def write(fd: int, data: bytes | memoryview) -> int:
        if point == "mid_write" and len(data) > 1 and due():
            real_write(fd, bytes(data[: len(data) // 2]))
            _say("at mid_write")
            _block_forever()
        return real_write(fd, data)

    def rename(src: str, dst: str, **kwargs: int) -> None:
        is_temp = isinstance(src, str) and src.startswith(durable.TEMP_PREFIX)
        if point == "before_rename" and is_temp and due():
            _say("at before_rename")
            _block_forever()
        real_rename(src, dst, **kwargs)
        if point == "after_rename" and is_temp and due():
            _say("at after_rename")
            _block_forever()

    def unlink(name: str, **kwargs: int) -> None:
        real_unlink(name, **kwargs)
        if point == "after_unlink" and due():
            _say("at after_unlink")
            _block_forever()

    os.write = write  # type: ignore[assignment]
    os.rename = rename  # type: ignore[assignment]
    os.unlink = unlink  # type: ignore[assignment]


def _write(root: str, state_json: str, seed: int, crash: tuple[str, int] | None,
           history_dir: str | None = None) -> None:
    from pathlib import Path

    from amux.memory import GLOBAL, Store
    from amux.memory.history import History

    state: dict[str, int] = json.loads(state_json)
    rng = random.Random(seed)
    history = None if history_dir is None else History(Path(history_dir))
    store = Store(root, exclusive=True, history=history)
    if crash is not None:
        _install_crash_point(*crash)
    _say(f"ready {store.removed_temps}")
    while True:
        path = rng.choice(DOCS)
        seq = state[path]
        expected = revision_at(path, seq)
        new = content_of(path, seq + 1)
        if new is None:
            result = store.forget(GLOBAL, path, expected)
            if result != {"path": path, "deleted": True}:
                raise AssertionError(f"forget {path} at seq {seq}: {result}")
            revision = "deleted"
        else:
            result = store.upsert(GLOBAL, path, new, expected)
            if result["created"] != (expected == "absent"):
                raise AssertionError(f"upsert {path} at seq {seq}: {result}")
            revision = result["revision"]
        state[path] = seq + 1
        _say(f"ack {path} {seq + 1} {revision}")


def _hold(root: str) -> None:
    from amux.memory import Store

    store = Store(root, exclusive=True)
    _say(f"ready {os.getpid()}")
    try:
        _block_forever()
    finally:
        store.close()


def main(argv: list[str]) -> None:
    mode, root = argv[0], argv[1]
    if mode == "hold":
        _hold(root)
    elif mode == "write":
        crash = (argv[4], int(argv[5])) if len(argv) > 4 else None
        _write(root, argv[2], int(argv[3]), crash)
    elif mode == "history":
        _write(root, argv[3], int(argv[4]), None, history_dir=argv[2])
    else:
        raise SystemExit(f"unknown mode {mode!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
