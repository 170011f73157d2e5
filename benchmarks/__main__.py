"""`python -m benchmarks`: build the corpus, measure search and writes, write the report.

One command so a later change can be compared against docs/benchmarks.md with
the same corpus, the same queries and the same conditions. `--quick` runs a few
repetitions only (a smoke test: the numbers are not for quoting).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from amux.memory.fs import SETTLE_NS
from benchmarks import (
    agent_launch_bench,
    corpus,
    hub_bench,
    launch_bench,
    mcp_bench,
    recall,
    report,
    search_bench,
    terms,
    timing,
    write_bench,
)

RESULTS_DIR = Path(__file__).resolve().parent / "results"
EXTRA_CJK_TERMS = ["锁", "的配置", "配置"]
"""Recall terms beyond the queries' own: a single character found inside many
words, and a string that spans a word boundary."""


@dataclass(frozen=True)
class Repetitions:
    cold: int
    warm: int
    rotations: int
    rg: int
    writes: int
    interpreter: int
    hub_runs: int
    hub_seconds: float
    mcp_calls: int
    mcp_starts: int
    launches: int
    agent_rounds: int
    agent_profiles: int


FULL = Repetitions(cold=25, warm=51, rotations=31, rg=25, writes=401, interpreter=10,
                   hub_runs=15, hub_seconds=3.0, mcp_calls=200, mcp_starts=15,
                   launches=15, agent_rounds=15, agent_profiles=3)
QUICK = Repetitions(cold=3, warm=5, rotations=3, rg=3, writes=10, interpreter=3,
                    hub_runs=3, hub_seconds=0.5, mcp_calls=5, mcp_starts=2,
                    launches=2, agent_rounds=2, agent_profiles=1)


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument("--quick", action="store_true",
                        help="a few repetitions only: a smoke run, not numbers to quote")
    parser.add_argument("--markdown", action="store_true",
                        help="also print the Markdown section for docs/benchmarks.md")
    parser.add_argument("--json", type=Path, default=None,
                        help=f"where to write the JSON report (default {RESULTS_DIR}/latest.json"
                             " or quick.json)")
    parser.add_argument("--dir", type=Path, default=None,
                        help="an empty or new directory for the corpus (default: a temp dir); "
                             "choose it to measure another file system; kept afterwards")
    parser.add_argument("--seed", type=int, default=corpus.DEFAULT_SEED)
    parser.add_argument("--agent-rounds", type=int, default=None, metavar="N",
                        help="measured rounds of the real-agent launch benchmark (default "
                             f"{FULL.agent_rounds}, --quick {QUICK.agent_rounds}; 0 skips it)")
    parser.add_argument("--strict", action="store_true",
                        help="exit 1 when a target is missed (absolute targets only, "
                             "not the derived machine-relative rows)")
    return parser.parse_args(argv)


def _workdir(requested: Path | None) -> tuple[Path, bool]:
    if requested is None:
        return Path(tempfile.mkdtemp(prefix="amux-bench-")), True
    requested.mkdir(parents=True, exist_ok=True)
    if any(requested.iterdir()):
        raise SystemExit(f"--dir {requested} is not empty; give an empty or new directory")
    return requested, False


def _wait_until_settled(scope_dir: Path) -> float:
    """Sleep until every file and directory of the corpus is older than `SETTLE_NS`.

    The store caches a document or a directory listing only once its mtime/ctime is
    more than `amux.memory.fs.SETTLE_NS` old (a change within the same timestamp
    tick could otherwise go unseen). A corpus written seconds ago would make the
    first warm searches look slower than a Hub serving real, older notes, so the
    search phase starts only when everything has settled. Returns seconds waited.
    """
    newest = 0
    for dirpath, _dirnames, filenames in os.walk(scope_dir):
        for name in [".", *filenames]:
            st = os.stat(os.path.join(dirpath, name), follow_symlinks=False)
            newest = max(newest, st.st_mtime_ns, st.st_ctime_ns)
    margin_ns = SETTLE_NS // 10
    wait_ns = newest + SETTLE_NS + margin_ns - time.time_ns()
    if wait_ns > 0:
        time.sleep(wait_ns / 1e9)
    return max(0.0, wait_ns / 1e9)


def _progress(message: str) -> None:
    print(f"[bench] {message}", file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> dict[str, Any]:
    reps = QUICK if args.quick else FULL
    if args.agent_rounds is not None:
        reps = replace(reps, agent_rounds=max(0, args.agent_rounds))
    started = time.perf_counter()
    workdir, temporary = _workdir(args.dir)
    root = workdir / "memory"
    scope_dir = root / "global"
    rg = timing.rg_binary()
    load_at_start = timing.load_average()
    phases: dict[str, float] = {}

    def phase(name: str, since: float) -> float:
        now = time.perf_counter()
        phases[name] = round(now - since, 1)
        return now

    mark = started
    try:
        stats = corpus.generate(scope_dir, seed=args.seed)
        _progress(f"corpus: {stats.documents} docs, {stats.total_bytes:,} bytes, median "
                  f"{stats.median_bytes:,} B in {stats.generate_seconds:.1f} s at {scope_dir}")
        documents = list(corpus.iter_documents(scope_dir))
        folded = [(path, data.lower()) for path, data in documents]
        picker = terms.TermPicker([d for _, d in folded], [p for p, _ in folded],
                                  corpus.build_vocabulary(args.seed), args.seed)
        queries = terms.pick_queries(picker, reps.rotations + 1)
        files = [str(scope_dir / path) for path, _ in documents]  # the py floor's list
        mark = phase("corpus_and_terms", mark)
        waited = _wait_until_settled(scope_dir)
        if waited:
            _progress(f"waited {waited:.2f} s for the corpus's timestamps to settle")
        mark = phase("settle_wait", mark)
        references = [sets[0] for sets in queries.values()]

        search: dict[str, Any] = {}
        for shape, sets in queries.items():
            _progress(f"search: {shape}: {sets[0].query}")
            search[shape] = search_bench.bench_shape(
                root, scope_dir, sets[0], sets[1:], references, files,
                cold_runs=reps.cold, warm_runs=reps.warm, rg_runs=reps.rg, rg=rg)
        mark = phase("search", mark)

        cjk = [t.text for q in references for t in q.terms if not t.text.isascii()]
        recall_terms = list(dict.fromkeys(cjk + EXTRA_CJK_TERMS))
        _progress(f"recall: {len(recall_terms)} CJK terms, per document")
        recall_report = recall.check_recall(root, scope_dir, folded, recall_terms, rg)
        mark = phase("recall", mark)

        _progress(f"writes: {reps.writes} runs per size and variant, memory history off "
                  "and on interleaved")
        writes = write_bench.bench_writes(root, scope_dir, documents, reps.writes,
                                          history=workdir / "history")
        mark = phase("writes", mark)

        eight = next(q for q in references if q.shape == "8 terms")
        _progress(f"hub and CLI: {reps.hub_runs} process runs, {reps.hub_seconds:g} s load")
        rg_eight = search_bench.rg_argv(rg, eight, scope_dir, threads=None) if rg else None
        with hub_bench.running_hub(workdir) as (connection, env):
            hub = hub_bench.bench_hub(connection, env, scope_dir, eight.query, rg_eight,
                                      reps.hub_runs, reps.hub_seconds, home=workdir)
            mark = phase("hub", mark)
            _progress(f"MCP: {reps.mcp_calls} calls per operation, {reps.mcp_starts} starts")
            mcp = mcp_bench.bench_mcp(connection, env, scope_dir, eight.query,
                                      reps.mcp_calls, reps.mcp_starts)
            mark = phase("mcp", mark)
            _progress(f"launch: {reps.launches} runs per way")
            launch = launch_bench.bench_launch(workdir, reps.launches)
            mark = phase("launch", mark)
            agent_launch: dict[str, Any] | None = None
            if reps.agent_rounds:
                _progress(f"agent launch: {', '.join(agent_launch_bench.AGENTS)}, "
                          f"{reps.agent_rounds} rounds")
                agent_launch = agent_launch_bench.bench_agent_launch(
                    workdir, connection, reps.agent_rounds,
                    profile_runs=reps.agent_profiles, progress=_progress)
                mark = phase("agent_launch", mark)

        _progress("interpreter start")
        interpreter = timing.interpreter_start(reps.interpreter)
        phase("interpreter", mark)
        result: dict[str, Any] = {
            "command": shlex.join(["python", "-m", "benchmarks", *sys.argv[1:]]),
            "mode": "quick" if args.quick else "full",
            "machine": {**timing.machine_info(scope_dir), "load_average_start": load_at_start},
            "corpus": {**stats.to_dict(), "root": "<temp>/memory/global" if temporary
                       else str(scope_dir)},
            "repetitions": reps.__dict__,
            "search": search,
            "recall": recall_report,
            "writes": writes,
            "hub": hub,
            "mcp": mcp,
            "launch": launch,
            "interpreter_start": interpreter,
        }
        if agent_launch is not None:
            result["agent_launch"] = agent_launch
        result["targets"] = report.targets(result)
        result["phase_seconds"] = phases
        result["elapsed_seconds"] = round(time.perf_counter() - started, 1)
        return result
    finally:
        if temporary:
            shutil.rmtree(workdir, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    args = _arguments(argv)
    result = run(args)
    json_path = args.json or RESULTS_DIR / ("quick.json" if args.quick else "latest.json")
    json_path.parent.mkdir(parents=True, exist_ok=True)
    json_path.write_text(json.dumps(result, ensure_ascii=False, indent=1) + "\n")
    markdown = report.markdown(result)
    json_path.with_suffix(".md").write_text(markdown)
    print(report.text(result))
    if args.markdown:
        print("\n" + markdown)
    print(f"\nJSON: {json_path}\nMarkdown: {json_path.with_suffix('.md')}\n"
          f"elapsed: {result['elapsed_seconds']} s")
    missed = [row["target"] for row in result["targets"]
              if not row["met"] and not row.get("derived")]  # derived rows: information
    return 1 if args.strict and missed else 0


if __name__ == "__main__":
    sys.exit(main())
