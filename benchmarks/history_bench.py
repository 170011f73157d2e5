"""What memory history costs (issue 24): writes with it on and off, and reading a long one.

    python -m benchmarks.history_bench [--changes N] [--json FILE]

Writes with history on and off against the durable floor are rows of `python -m
benchmarks` (benchmarks/write_bench.py). Here:

- **Commits**, per change, as the writer thread makes them: batches of 1, 16 and 256
  changes, each one durable pack; and libgit2 writing loose objects, each fsynced (how
  history committed before its packs).
- **Reading.** A Hub whose global scope has `--changes` changes (made through the store,
  then the Hub started on them): `amux memory log` (the newest 50) and `amux memory log
  PATH` of a document changed once, at the start (the whole history walked), through the
  installed CLI, against `python3 -c pass`.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks import timing
from benchmarks.hub_bench import amux_command, hub_process

SIZE = 3 * 1024


def bench_commit(work: Path, commits: int) -> dict[str, Any]:
    """ms per change: history's writer committing batches of 1, 16 and 256 changes (one
    pack each, amux/memory/gitpack.py), against libgit2 writing each commit's objects
    loose, each fsynced (how history committed before; medians)."""
    import pygit2

    from amux.memory import GLOBAL
    from amux.memory.history import History
    from amux.memory.versions import Author, Change

    result: dict[str, Any] = {}
    history = History(work / "batches")
    try:
        for size in (1, 16, 256):
            per_change = []
            for round_number in range(max(3, commits // size)):
                changes = [Change("update", f"notes/d{n % 10}.md",
                                  os.urandom(SIZE // 2).hex().encode(), Author("bench"),
                                  time.time()) for n in range(size)]
                started = time.perf_counter()
                for change in changes:
                    history.record(GLOBAL, change)
                history.flush()
                per_change.append((time.perf_counter() - started) / size)
                del round_number
            result[f"batch of {size}"] = round(statistics.median(per_change) * 1000, 3)
    finally:
        history.close()
    repo = pygit2.init_repository(str(work / "loose.git"), bare=True)
    signature = pygit2.Signature("bench", "bench@amux", 0, 0)
    head = None
    samples = []
    for n in range(commits):
        started = time.perf_counter()
        blob = repo.create_blob(os.urandom(SIZE // 2).hex().encode())
        index = pygit2.Index()
        if head is not None:
            index.read_tree(repo[head].tree)
        index.add(pygit2.IndexEntry(f"notes/d{n % 10}.md", blob, pygit2.enums.FileMode.BLOB))
        head = repo.create_commit("HEAD", signature, signature, "bench\n",
                                  index.write_tree(repo), [] if head is None else [head])
        samples.append(time.perf_counter() - started)
    result["libgit2 loose objects, fsync on"] = round(statistics.median(samples) * 1000, 3)
    return result


def bench_log(work: Path, changes: int, runs: int) -> dict[str, Any]:
    """`amux memory log` over a history of `changes` changes, through the installed CLI."""
    from amux.memory import GLOBAL, Store
    from amux.memory.history import History
    from amux.memory.versions import Author

    home = work / "log-home"
    history = History(home / "history")
    built = time.perf_counter()
    with Store(home / "memory", exclusive=True, history=history) as store:
        store.upsert(GLOBAL, "once.md", "changed once\n", "absent", Author("bench"))
        revision = "absent"
        for n in range(changes - 1):
            revision = store.upsert(GLOBAL, "busy.md", f"version {n}\n", revision,
                                    Author("bench"))["revision"]
        history.close()
    built = time.perf_counter() - built
    env = {key: value for key, value in os.environ.items() if not key.startswith("AMUX_")}
    env["AMUX_HOME"] = str(home)
    from amux.hub.config import ConfigFile

    ConfigFile(home).set("memory.enabled", "true")
    samples: dict[str, list[float]] = {"log (newest 50)": [], "log once.md (whole history)": [],
                                       "python3 -c pass": []}
    argv = {"log (newest 50)": [*amux_command(), "memory", "log"],
            "log once.md (whole history)": [*amux_command(), "memory", "log", "once.md"],
            "python3 -c pass": [sys.executable, "-c", "pass"]}
    with hub_process(home):
        for _ in range(runs):
            for name, command in argv.items():
                started = time.perf_counter()
                done = subprocess.run(command, env=env, capture_output=True, check=False)
                samples[name].append(time.perf_counter() - started)
                if done.returncode != 0:
                    raise RuntimeError(f"{command[-3:]} failed: {done.stderr[-300:]!r}")
    return {"changes": changes, "built_seconds": round(built, 1),
            **{name: timing.summarize(values) for name, values in samples.items()}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.history_bench",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--commits", type=int, default=200, help="changes per batch size")
    parser.add_argument("--changes", type=int, default=10_000, help="changes in the log's history")
    parser.add_argument("--log-runs", type=int, default=20, help="CLI runs per log command")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="amux-history-bench-"))
    load = timing.load_average()
    result = {"machine": {**timing.machine_info(work), "load_average_start": load},
              "commit_ms": bench_commit(work, args.commits),
              "log": bench_log(work, args.changes, args.log_runs),
              "command": " ".join(["python -m benchmarks.history_bench",
                                   *(argv if argv is not None else sys.argv[1:])])}
    subprocess.run(["rm", "-rf", str(work)], check=False)
    text = json.dumps(result, indent=1)
    if args.json is not None:
        args.json.write_text(text + "\n")
    for setting, ms in result["commit_ms"].items():
        print(f"commit, {setting}: {ms:.2f} ms per change")
    log = result["log"]
    for name in ("log (newest 50)", "log once.md (whole history)", "python3 -c pass"):
        print(f"{name:32s} p50 {log[name]['p50_ms']:7.1f} ms  ({log['changes']} changes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
