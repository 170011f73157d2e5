"""What memory history costs (issue 24): writes with it on and off, and reading a long one.

    python -m benchmarks.history_bench [--changes N] [--json FILE]

Writes with history on and off against the durable floor are rows of `python -m
benchmarks` (benchmarks/write_bench.py). Here:

- **One commit**, as the writer thread makes it, split into its blob, its trees and the
  commit with its ref, with libgit2's fsync on (as the Hub runs) and off.
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
    """One commit's parts with libgit2's fsync on and off (ms, medians)."""
    import pygit2

    result: dict[str, Any] = {}
    for fsync in (True, False):
        pygit2.option(pygit2.enums.Option.ENABLE_FSYNC_GITDIR, fsync)
        repo = pygit2.init_repository(str(work / f"commit-{fsync}.git"), bare=True)
        signature = pygit2.Signature("bench", "bench@amux", 0, 0)
        head = None
        parts: dict[str, list[float]] = {"blob": [], "trees": [], "commit and ref": []}
        for n in range(commits):
            started = time.perf_counter()
            blob = repo.create_blob(os.urandom(SIZE // 2).hex().encode())
            blobbed = time.perf_counter()
            index = pygit2.Index()
            if head is not None:
                index.read_tree(repo[head].tree)
            index.add(pygit2.IndexEntry(f"notes/d{n % 10}.md", blob,
                                        pygit2.enums.FileMode.BLOB))
            tree = index.write_tree(repo)
            treed = time.perf_counter()
            head = repo.create_commit("HEAD", signature, signature, "bench\n", tree,
                                      [] if head is None else [head])
            done = time.perf_counter()
            for part, seconds in (("blob", blobbed - started), ("trees", treed - blobbed),
                                  ("commit and ref", done - treed)):
                parts[part].append(seconds)
        result["fsync on" if fsync else "fsync off"] = {
            part: round(statistics.median(values) * 1000, 3) for part, values in parts.items()}
    pygit2.option(pygit2.enums.Option.ENABLE_FSYNC_GITDIR, True)
    return result


def bench_log(work: Path, changes: int, runs: int) -> dict[str, Any]:
    """`amux memory log` over a history of `changes` changes, through the installed CLI."""
    from amux.memory import GLOBAL, Store
    from amux.memory.history import Author, History

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
    parser.add_argument("--commits", type=int, default=200, help="commits per fsync setting")
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
    for setting, parts in result["commit_ms"].items():
        print(f"one commit, {setting}: " + ", ".join(f"{k} {v:.2f}" for k, v in parts.items())
              + " ms")
    log = result["log"]
    for name in ("log (newest 50)", "log once.md (whole history)", "python3 -c pass"):
        print(f"{name:32s} p50 {log[name]['p50_ms']:7.1f} ms  ({log['changes']} changes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
