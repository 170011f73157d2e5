"""Search latency: cold store object, warm repeated query, warm store with new terms, floors.

Three in-process conditions matter for the store (SPEC §3 search runs in the Hub):

- **cold**: a brand-new `Store` (empty `SearchCache`) per measurement: what the
  first search after a Hub start, or a one-shot process, pays: every document
  read, lowered and searched.
- **warm, repeated**: one `Store` answering the same query again: documents and
  per-term answers come from the cache, each still validated by `lstat`.
- **warm, new terms**: one `Store` that has answered other searches, timed on term
  sets it has never seen: documents are cached but every term must be searched
  for in every document's bytes.

Two floors, measured in the same run on the same files and terms:

- ripgrep (`rg -F -i -c`) over the same directory, whole-process time (a search
  tool the user could run instead), with its default threads and with `-j1` (our
  search is single-threaded);
- the **bare-Python floor** (`py_floor`): a plain loop with no store code over the
  `*.md` files (list gathered once, outside the timing): `open(path, 'rb').read()
  .lower()`, then `term in data` for every folded term. It is what any in-process
  byte scan costs on this machine and this interpreter, so it shows how much of the
  cold time is the store's own logic rather than reading, folding and searching.

The page cache is warm in every case (one untimed warm-up): that is the reference
condition, not a cold disk.

Measurements of all conditions are interleaved round by round so that machine
noise lands on all of them alike.
"""

from __future__ import annotations

import gc
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any

from amux.memory import GLOBAL, Store
from benchmarks.terms import QuerySet
from benchmarks.timing import run_process, summarize, timed


def python_floor(files: list[str], needles: list[bytes]) -> tuple[int, int]:
    """The bare-Python scan: (documents with any term, document-term matches).

    Every term is tested in every document (no short-circuit), as the store does.
    """
    documents = matches = 0
    for name in files:
        with open(name, "rb") as handle:
            data = handle.read().lower()
        found = 0
        for needle in needles:
            if needle in data:
                found += 1
        if found:
            documents += 1
            matches += found
    return documents, matches


def rg_argv(rg: str, query: QuerySet, scope_dir: Path, *, threads: int | None) -> list[str]:
    """`rg -F -i -c -e t1 -e t2 … DIR`: literal, case-insensitive, count per file."""
    argv = [rg, "--no-config", "--no-ignore", "-F", "-i", "-c"]
    if threads is not None:
        argv.append(f"-j{threads}")
    for term in query.terms:
        argv += ["-e", term.text]
    return [*argv, str(scope_dir)]


class _Checks:
    """What every full-scope search reported, besides its time."""

    def __init__(self) -> None:
        self.searches = 0
        self.incomplete = 0
        self.scanned_files: set[int] = set()
        self.result_counts: set[int] = set()

    def add(self, response: dict[str, Any]) -> None:
        self.searches += 1
        self.incomplete += bool(response["incomplete"])
        self.scanned_files.add(response["scanned_files"])
        self.result_counts.add(len(response["results"]))

    def to_dict(self) -> dict[str, Any]:
        return {"searches": self.searches, "incomplete": self.incomplete,
                "scanned_files": sorted(self.scanned_files),
                "result_counts": sorted(self.result_counts)}


def bench_shape(
    root: Path,
    scope_dir: Path,
    reference: QuerySet,
    rotation: list[QuerySet],
    primers: list[QuerySet],
    files: list[str],
    *,
    cold_runs: int,
    warm_runs: int,
    rg_runs: int,
    rg: str | None,
) -> dict[str, Any]:
    """All conditions for one query shape; `rotation[0]` is the new-terms warm-up.

    `files` are the scope's `*.md` files (absolute paths) for the bare-Python floor.
    """
    checks = _Checks()
    query = reference.query
    needles = [term.text.encode().lower() for term in reference.terms]
    floor_counts: set[tuple[int, int]] = set()

    def search(store: Store, text: str) -> float:
        seconds, response = timed(lambda: store.search(GLOBAL, text))
        assert isinstance(response, dict)
        checks.add(response)
        return seconds

    open_samples: list[float] = []

    def cold() -> float:
        gc.collect()
        seconds, store = timed(lambda: Store(root))
        assert isinstance(store, Store)
        open_samples.append(seconds)
        try:
            return search(store, query)
        finally:
            store.close()

    def py_floor() -> float:
        gc.collect()
        seconds, counts = timed(lambda: python_floor(files, needles))
        assert isinstance(counts, tuple)
        floor_counts.add(counts)
        return seconds

    warm_store = Store(root)
    new_store = Store(root)
    fresh = iter(rotation[1:])
    try:
        cold()  # warm-up: page cache, imports, code paths
        py_floor()
        search(warm_store, query)
        for primer in primers:  # "a store that already answered other searches"
            search(new_store, primer.query)
        search(new_store, rotation[0].query)
        kinds: dict[str, tuple[int, Callable[[], float]]] = {
            "cold": (cold_runs, cold),
            "warm_repeated": (warm_runs, lambda: search(warm_store, query)),
            "warm_new_terms": (len(rotation) - 1, lambda: search(new_store, next(fresh).query)),
            "py_floor": (cold_runs, py_floor),
        }
        rg_counts: dict[str, int] = {}
        if rg is not None:
            for label, threads in (("rg", None), ("rg_j1", 1)):
                argv = rg_argv(rg, reference, scope_dir, threads=threads)
                kinds[label] = (rg_runs, _rg_runner(argv, rg_counts, label))
                kinds[label][1]()  # warm-up
        samples = _interleave(kinds)
    finally:
        warm_store.close()
        new_store.close()
    report: dict[str, Any] = {
        "query": reference.to_dict(),
        "new_term_queries": [q.query for q in rotation],
        "checks": checks.to_dict(),
        "store_open_cold": summarize(open_samples),
        "py_floor_files": len(files),
        "py_floor_matching_files": sorted(docs for docs, _ in floor_counts),
        "py_floor_term_matches": sorted(matches for _, matches in floor_counts),
    }
    for label, values in samples.items():
        report[label] = summarize(values)
    report["cold_vs_py"] = round(report["cold"]["p50_ms"] / report["py_floor"]["p50_ms"], 3)
    if rg is not None:
        shown = rg_argv("rg", reference, scope_dir, threads=None)[:-1]
        report["rg_argv"] = shlex.join(shown) + " <scope dir>"
        report["rg_matching_files"] = rg_counts.get("rg")
        for label in ("cold", "warm_repeated", "warm_new_terms"):
            report[f"{label}_vs_rg"] = round(
                report[label]["p50_ms"] / report["rg"]["p50_ms"], 3)
    return report


def _rg_runner(argv: list[str], counts: dict[str, int], label: str) -> Callable[[], float]:
    def run() -> float:
        seconds, done = run_process(argv)
        if done.returncode not in (0, 1):
            raise RuntimeError(f"rg failed ({done.returncode}): {done.stderr.decode()[:500]}")
        counts[label] = len(done.stdout.splitlines())  # -c lists matching files only
        return seconds

    return run


def _interleave(kinds: dict[str, tuple[int, Callable[[], float]]]) -> dict[str, list[float]]:
    """Run each condition once per round until each has its count of samples."""
    samples: dict[str, list[float]] = {label: [] for label in kinds}
    rounds = max(count for count, _ in kinds.values())
    for _ in range(rounds):
        for label, (count, action) in kinds.items():
            if len(samples[label]) < count:
                samples[label].append(action())
    return samples
