"""Upsert latency against the raw durable-write floor, measured in the same run.

`store.upsert` promises durability (SPEC §2: temp file, fsync, rename, fsync the
directory) plus a revision check, quota accounting and path safety. The honest
comparison is therefore the same four syscalls done by hand on the same file
system and directory, with the same sizes and count; a plain write without any
fsync is shown as well so a reader sees how much of the time is the disk.

`store.upsert` is timed twice: with `str` content (`upsert`, what the Hub passes
after JSON decoding; the targets use this one) and with the same content already
encoded (`upsert_bytes`), so the cost of encoding shows separately. The bytes
path is not free either: the store checks that bytes are valid UTF-8 (a decode).
Both conversions are also timed on their own, in process (`encode_us`,
`utf8_check_us`), since the difference of two ~1 ms medians cannot resolve a few
microseconds.

Three writes (issue 14's targets): replacing a whole 3 KiB document (≤ 1.3× the floor)
and a whole 64 KiB one (≤ 2.5×), alternating two unrelated contents, and a typical edit
of a large note, one line appended to a 60 KiB document and taken away again (≤ 1.3×):
the secret guard then reads only the lines that changed.

Each iteration runs the variants in a shuffled order (a seeded generator: every run
shuffles alike), so disk noise and write-back bursts hit all of them alike and none
always follows the same other. That matters: a write's fsync also commits what the
write before it left in the file system's journal, and in the rotating order used
before, each variant mostly kept one predecessor (the upsert with history followed the
plain write 4 times in 5 and paid for committing its rename). The plain write, the one
variant that leaves its changes to the next fsync, is made durable after its timing,
untimed. The store replaces real corpus documents, with the correct
`expected_revision`, alternating two contents so every write (of either upsert
variant) changes the file, in a scope that holds the whole ~8 MiB corpus (the
quota accounting sees a realistic, full-ish scope).
"""

from __future__ import annotations

import hashlib
import os
import random
import statistics
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from amux.memory import GLOBAL, Store, secretguard
from benchmarks.timing import summarize, timed

SIZES = {"3 KiB": 3 * 1024, "64 KiB": 64 * 1024, "60 KiB + 1 line": 60 * 1024}
"""Each write's document size; the `+ 1 line` one is an edit, not a replacement."""
TARGETS = {"3 KiB": 1.3, "64 KiB": 2.5, "60 KiB + 1 line": 1.3}
"""Each write's target, upsert p50 / durable floor p50."""
APPENDED = "- and one more line, appended by hand at the end of the note\n"
WARMUP = 3
ORDER_SEED = 24
"""Seeds the shuffled order of the variants in each iteration."""
CONVERSION_LOOPS = 2_000
"""Calls per sample when timing `str.encode` / the UTF-8 check alone (7 samples)."""
_TEMP_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC


def exact_text(source: bytes, size: int, offset: int) -> str:
    """Exactly `size` bytes of UTF-8 text cut from `source` (cycled), ending in a newline."""
    data = (source[offset:] + source) * (size // max(1, len(source)) + 2)
    cut = data[: size - 1]
    while True:
        try:
            text = cut.decode("utf-8")
            break
        except UnicodeDecodeError:
            cut = cut[:-1]
    return text + " " * (size - 1 - len(cut)) + "\n"


def contents_for(source: bytes, label: str, size: int) -> list[str]:
    """The two contents a write row alternates: one line appended to a text and taken away
    again (`… + 1 line`), or two unrelated texts of `size` bytes."""
    if label.endswith("+ 1 line"):
        base = exact_text(source, size, len(source) // 3)
        return [base, base + APPENDED]
    return [exact_text(source, size, offset) for offset in (0, len(source) // 2)]


def _write_floor(dir_fd: int, name: str, data: bytes, *, durable: bool,
                 around_fsync: AbstractContextManager[object] | None = None) -> None:
    """The raw floor: temp + write (+ fsync) + rename (+ fsync of the directory);
    `around_fsync` is entered just before the temp file's fsync and left after it
    (write_parts times work placed there)."""
    temp = ".bench-tmp-" + name
    fd = os.open(temp, _TEMP_FLAGS, 0o600, dir_fd=dir_fd)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        if durable and around_fsync is None:
            os.fsync(fd)
        elif durable and around_fsync is not None:
            with around_fsync:
                os.fsync(fd)
    finally:
        os.close(fd)
    os.rename(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    if durable:
        os.fsync(dir_fd)


def _settle(dir_fd: int, name: str) -> None:
    """Make the plain write's file and rename durable (untimed), so the next variant's
    fsync does not commit them."""
    fd = os.open(name, os.O_RDONLY | os.O_CLOEXEC, dir_fd=dir_fd)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    os.fsync(dir_fd)


def _per_call_us(action: Callable[[], object]) -> float:
    """Median over 7 samples of the per-call time of a fast `action`, in microseconds."""
    samples = []
    for _ in range(7):
        started = time.perf_counter()
        for _ in range(CONVERSION_LOOPS):
            action()
        samples.append((time.perf_counter() - started) / CONVERSION_LOOPS)
    return round(statistics.median(samples) * 1e6, 2)


def _pick_targets(documents: list[tuple[str, bytes]]) -> list[tuple[str, str, int]]:
    """(label, path, size): an existing document near each size (replacing keeps 1,024)."""
    topics = [(path, len(data)) for path, data in documents if path != "MEMORY.md"]
    targets: list[tuple[str, str, int]] = []
    for label, size in SIZES.items():
        taken = {path for _, path, _ in targets}
        candidates = [item for item in topics if item[0] not in taken]
        path = min(candidates, key=lambda item: (abs(item[1] - size), item[0]))[0]
        targets.append((label, path, size))
    return targets


def bench_writes(root: Path, scope_dir: Path, documents: list[tuple[str, bytes]],
                 runs: int, history: Path | None = None) -> dict[str, Any]:
    """Median upsert (str and bytes) vs durable floor vs plain write, per size; with
    `history`, the store keeps memory history there, as the Hub does (docs/store.md)."""
    from amux.memory.history import History

    source = b"\n".join(data for _path, data in documents[:64])
    report: dict[str, Any] = {"runs": runs, "warmup": WARMUP}
    targets = _pick_targets(documents)
    kept = twin = None
    if history is not None:  # a second root on the same disk, its store keeping history
        twin_root = history.parent / "memory-history"
        for _, path, _ in targets:
            copy = twin_root.joinpath(*GLOBAL.directory, path)
            copy.parent.mkdir(parents=True, exist_ok=True)
            copy.write_bytes((scope_dir / path).read_bytes())
        kept = History(history)
        twin = Store(twin_root, exclusive=True, history=kept)  # as the Hub opens it
    store = Store(root, exclusive=True)
    try:
        for label, path, size in targets:
            rows = _bench_one(store, scope_dir, path, contents_for(source, label, size), runs,
                              twin)
            for row in rows.values():
                row["target"] = TARGETS[label]
            report[label] = rows["off"]
            if "on" in rows:
                report[f"{label}, history on"] = rows["on"]
    finally:
        if twin is not None:
            twin.close()
        if kept is not None:
            kept.close()
        store.close()
    return report


def _bench_one(store: Store, scope_dir: Path, path: str, contents: list[str],
               runs: int, twin: Store | None = None) -> dict[str, dict[str, Any]]:
    """Rows "off" and, with a `twin` store keeping history, "on": its upserts of the same
    contents interleaved with the others, against the same floor samples."""
    encoded = [text.encode() for text in contents]
    target = scope_dir / path
    dir_fd = os.open(target.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    floor_name = f"bench-floor-{len(encoded[0])}.bin"  # not *.md: ignored by the store
    plain_name = f"bench-plain-{len(encoded[0])}.bin"
    revision = hashlib.sha256(target.read_bytes()).hexdigest()
    iteration = 0
    upserts = 0  # both upsert variants alternate the content: every write changes the file

    def ours() -> None:
        nonlocal revision, upserts
        # str, as the Hub hands it over after JSON decoding
        response = store.upsert(GLOBAL, path, contents[upserts % 2], revision)
        revision = response["revision"]
        upserts += 1

    def ours_bytes() -> None:
        nonlocal revision, upserts
        # the same content pre-encoded: no encode, but the store's UTF-8 check
        response = store.upsert(GLOBAL, path, encoded[upserts % 2], revision)
        revision = response["revision"]
        upserts += 1

    def floor() -> None:
        _write_floor(dir_fd, floor_name, encoded[iteration % 2], durable=True)

    def plain() -> None:
        _write_floor(dir_fd, plain_name, encoded[iteration % 2], durable=False)

    twin_revision = revision
    twin_upserts = 0

    def ours_with_history() -> None:
        nonlocal twin_revision, twin_upserts
        assert twin is not None
        response = twin.upsert(GLOBAL, path, contents[twin_upserts % 2], twin_revision)
        twin_revision = response["revision"]
        twin_upserts += 1

    variants: list[tuple[str, Callable[[], None]]] = [
        ("upsert", ours), ("upsert_bytes", ours_bytes), ("durable_floor", floor),
        ("plain_write", plain)]
    if twin is not None:
        variants.append(("upsert_history", ours_with_history))
    samples: dict[str, list[float]] = {label: [] for label, _ in variants}
    order = random.Random(ORDER_SEED)
    try:
        for iteration in range(WARMUP + runs):
            for label, action in order.sample(variants, len(variants)):
                seconds, _ = timed(action)
                if iteration >= WARMUP:
                    samples[label].append(seconds)
                if action is plain:  # its changes, committed outside any timing
                    _settle(dir_fd, plain_name)
        for name in (floor_name, plain_name):
            os.unlink(name, dir_fd=dir_fd)
    finally:
        os.close(dir_fd)
    rows = {"off": _row(samples, "upsert", path, encoded, contents)}
    if twin is not None:
        on = _row(samples, "upsert_history", path, encoded, contents)
        on["history_vs_off_paired_median"] = round(statistics.median(
            [a / b for a, b in zip(samples["upsert_history"], samples["upsert"],
                                   strict=True)]), 3)
        rows["on"] = on
    return rows


def _row(samples: dict[str, list[float]], upsert: str, path: str, encoded: list[bytes],
         contents: list[str]) -> dict[str, Any]:
    """One table row: the `upsert` variant's samples against the floors'."""
    paired = [ours_s / floor_s for ours_s, floor_s
              in zip(samples[upsert], samples["durable_floor"], strict=True)]
    report: dict[str, Any] = {"path": path, "bytes": len(encoded[0])}
    report["upsert"] = summarize(samples[upsert])
    for label in ("durable_floor", "plain_write"):
        report[label] = summarize(samples[label])
    report["ratio_p50"] = round(report["upsert"]["p50_ms"] / report["durable_floor"]["p50_ms"], 3)
    report["ratio_paired_median"] = round(statistics.median(paired), 3)
    report["overhead_p50_ms"] = round(
        report["upsert"]["p50_ms"] - report["durable_floor"]["p50_ms"], 3)
    if upsert != "upsert":
        return report  # the bytes variant and the conversions: the row without history
    report["upsert_bytes"] = summarize(samples["upsert_bytes"])
    report["ratio_bytes_p50"] = round(
        report["upsert_bytes"]["p50_ms"] / report["durable_floor"]["p50_ms"], 3)
    report["str_minus_bytes_p50_ms"] = round(
        report["upsert"]["p50_ms"] - report["upsert_bytes"]["p50_ms"], 3)
    text, data = contents[0], encoded[0]
    report["encode_us"] = _per_call_us(lambda: text.encode("utf-8"))
    report["utf8_check_us"] = _per_call_us(lambda: data.decode("utf-8"))
    report["guard_us"] = _per_call_us(lambda: secretguard.scan_change(encoded[1], data))
    return report
