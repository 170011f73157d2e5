"""Where an upsert's time goes: the store's write with one part left out at a time.

    python -m benchmarks.write_parts [--runs N] [--dir DIR] [--json FILE]

The write rows of `python -m benchmarks` (write_bench.py) put a whole `store.upsert`
against the raw durable floor. This splits the gap, on the same corpus, sizes and
contents: each variant is the same upsert with one part switched off for that call, all
variants and the floor interleaved in a shuffled order (write_bench.py says why):

- `full`: the Hub's write, history on (what the "history on" rows measure);
- `no guard`: the secret guard finds nothing without scanning;
- `no revision hash`: the new content's SHA-256 is not computed (a fixed revision);
- `no keep link`: the replaced version is not hard-linked for history (still recorded);
- `no history`: the store keeps no history (the rows without history);
- `bytes`: the content passed encoded (the UTF-8 check instead of the encode);
- `bare`: all of these off at once: what is left is the checks the contract requires
  (path, revision, quota), reading the current version and the descriptor walk.

Switching a part off breaks what it is for (the history of this throwaway store holds
wrong revisions), which is why this is a measurement and never a mode of the store.

Then **overlap**: whether CPU work can hide under the fsync on this machine. The
floor's write with ~100 µs of Python work first, against the same work on a helper
thread while this one waits in the fsync. Where the second is not faster, pipelining
the store's checks with its fsync (docs/benchmarks.md, issue 24) cannot help here.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from pathlib import Path
from typing import Any

from amux.memory import GLOBAL, Store
from amux.memory import store as store_module
from amux.memory.history import History
from amux.memory.revision import revision_of
from benchmarks import corpus
from benchmarks.write_bench import ORDER_SEED, _pick_targets, _write_floor, contents_for

PARTS = ("guard", "hash", "keep", "history", "encode")
VARIANTS: dict[str, tuple[str, ...]] = {
    "full": (), "no guard": ("guard",), "no revision hash": ("hash",),
    "no keep link": ("keep",), "no history": ("history",), "bytes": ("encode",),
    "bare": PARTS,
}
FIXED_REVISION = "ab" * 32
WORK_SECONDS = 100e-6


@contextmanager
def _without(store: Store, off: tuple[str, ...]) -> Iterator[None]:
    """`store` with the parts `off` switched off until the block ends."""
    with ExitStack() as stack:
        def swap(owner: Any, name: str, value: Any) -> None:
            before = owner.__dict__[name] if isinstance(owner, type) else getattr(owner, name)
            setattr(owner, name, value)
            stack.callback(setattr, owner, name, before)

        if "guard" in off:
            swap(Store, "_check_secrets", lambda self, scope, data, base: False)
        if "hash" in off:
            swap(store_module, "revision_of", lambda data: FIXED_REVISION)
        if "keep" in off:
            swap(History, "keep", lambda self, *args: None)
        if "history" in off:
            swap(store, "history", None)
        yield


def bench_parts(root: Path, scope_dir: Path, documents: list[tuple[str, bytes]],
                runs: int) -> dict[str, Any]:
    """Per write size: every variant's p50 (ms) and its ratio to the floor's p50."""
    source = b"\n".join(data for _path, data in documents[:64])
    history = History(root.parent / "history")
    store = Store(root, exclusive=True, history=history)
    report: dict[str, Any] = {"runs": runs}
    try:
        for label, path, size in _pick_targets(documents):
            report[label] = _bench_size(store, scope_dir, path,
                                        contents_for(source, label, size), runs)
    finally:
        store.close()
        history.close()
    return report


def _bench_size(store: Store, scope_dir: Path, path: str, contents: list[str],
                runs: int) -> dict[str, Any]:
    encoded = [text.encode() for text in contents]
    target = scope_dir / path
    revision = [revision_of(target.read_bytes())]
    writes = [0]  # every write alternates the content, so every write changes the file
    dir_fd = os.open(target.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)

    def upsert(off: tuple[str, ...]) -> Callable[[], None]:
        def write() -> None:
            content = (encoded if "encode" in off else contents)[writes[0] % 2]
            with _without(store, off):
                answer = store.upsert(GLOBAL, path, content, revision[0])
            revision[0] = answer["revision"]
            writes[0] += 1
        return write

    def floor() -> None:
        _write_floor(dir_fd, "parts-floor.bin", encoded[writes[0] % 2], durable=True)

    variants = [("floor", floor), *((name, upsert(off)) for name, off in VARIANTS.items())]
    samples: dict[str, list[float]] = {name: [] for name, _ in variants}
    order = random.Random(ORDER_SEED)
    try:
        for iteration in range(3 + runs):
            for name, action in order.sample(variants, len(variants)):
                started = time.perf_counter()
                action()
                if iteration >= 3:
                    samples[name].append(time.perf_counter() - started)
        os.unlink("parts-floor.bin", dir_fd=dir_fd)
    finally:
        os.close(dir_fd)
    floor_p50 = statistics.median(samples["floor"])
    return {name: {"p50_ms": round(statistics.median(values) * 1000, 3),
                   "ratio": round(statistics.median(values) / floor_p50, 3)}
            for name, values in samples.items()}


def _work(seconds: float) -> None:
    """Python work (holding the GIL, as the store's checks do) for about `seconds`."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


class _Helper:
    """A thread that runs one call when told, and says when it is done."""

    def __init__(self) -> None:
        self.go, self.done = threading.Lock(), threading.Lock()
        self.go.acquire()
        self.done.acquire()
        self.call: Callable[[], None] = lambda: None
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self) -> None:
        while True:
            self.go.acquire()
            self.call()
            self.done.release()


def bench_overlap(directory: Path, runs: int) -> dict[str, Any]:
    """The durable floor's write (3 KiB) alone, with `WORK_SECONDS` of Python work before
    its fsync, and with that work on a helper thread during the fsync (medians, ms)."""
    data = os.urandom(3 * 1024)
    dir_fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    helper = _Helper()
    helper.call = lambda: _work(WORK_SECONDS)

    @contextmanager
    def work_first() -> Iterator[None]:
        _work(WORK_SECONDS)
        yield

    @contextmanager
    def work_beside() -> Iterator[None]:
        helper.go.release()
        try:
            yield
        finally:
            helper.done.acquire()

    arms: dict[str, Callable[[], AbstractContextManager[None]] | None] = {
        "floor": None, "work first": work_first, "work beside the fsync": work_beside}

    def write(mode: str) -> None:
        arm = arms[mode]
        _write_floor(dir_fd, "overlap.bin", data, durable=True,
                     around_fsync=None if arm is None else arm())

    modes = list(arms)
    samples: dict[str, list[float]] = {mode: [] for mode in modes}
    order = random.Random(ORDER_SEED)
    try:
        for iteration in range(3 + runs):
            for mode in order.sample(modes, len(modes)):
                started = time.perf_counter()
                write(mode)
                if iteration >= 3:
                    samples[mode].append(time.perf_counter() - started)
        os.unlink("overlap.bin", dir_fd=dir_fd)
    finally:
        os.close(dir_fd)
    return {"work_us": WORK_SECONDS * 1e6,
            **{mode: round(statistics.median(values) * 1000, 3)
               for mode, values in samples.items()}}


def markdown(report: dict[str, Any]) -> str:
    """The two tables of docs/benchmarks.md."""
    sizes = [label for label in report["parts"] if label != "runs"]
    lines = ["| variant | " + " | ".join(sizes) + " |",
             "|---|" + "---:|" * len(sizes)]
    for name in ("floor", *VARIANTS):
        cells = [f"{report['parts'][size][name]['p50_ms']:.3f} ms "
                 f"({report['parts'][size][name]['ratio']:.2f}×)" for size in sizes]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    overlap = report["overlap"]
    lines += ["", "| 3 KiB durable write | p50 |", "|---|---:|"]
    lines += [f"| {mode} | {overlap[mode]:.3f} ms |"
              for mode in ("floor", "work first", "work beside the fsync")]
    return "\n".join(lines)


def main() -> None:  # pragma: no cover - run by hand: python -m benchmarks.write_parts
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=300, help="writes per variant and size")
    parser.add_argument("--dir", type=Path, default=None,
                        help="an empty directory on the file system to measure")
    parser.add_argument("--json", type=Path, default=None, help="also write the report here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir) as work:
        root = Path(work) / "memory"
        scope_dir = root.joinpath(*GLOBAL.directory)
        corpus.generate(scope_dir)
        documents = list(corpus.iter_documents(scope_dir))
        report = {"when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                  "parts": bench_parts(root, scope_dir, documents, args.runs),
                  "overlap": bench_overlap(Path(work), args.runs)}
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    print(f"python -m benchmarks.write_parts --runs {args.runs} ({report['when']})\n")
    print(markdown(report))


if __name__ == "__main__":  # pragma: no cover
    main()
