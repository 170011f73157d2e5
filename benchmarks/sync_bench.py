"""What `amux memory sync` of 1,000 changed documents costs, against `git push` and `git
pull` of the same data in the same run.

    python -m benchmarks.sync_bench [--documents N] [--rounds N] [--json FILE] [--markdown]

Two amux homes, each with its own Hub (history on), share a local bare repository. Each
round, interleaved with git on the same texts:

- **amux**: home A changes every document (untimed: 1,000 upserts), then `sync` on A
  (timed: fetch, nothing to merge, push) and `sync` on B (timed: fetch, merge per
  document, 1,000 conditional writes through B's Hub, the merge commit, push);
- **floors**: clone X changes the same files, `git add -A && git commit` (timed), `git
  push` (timed), and clone Y `git pull` (timed).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from amux.client.transport import HubClient
from benchmarks import report, timing
from benchmarks.hub_bench import hub_process
from benchmarks.import_bench import GIT_ENV


def _texts(count: int, version: int) -> dict[str, str]:
    return {f"notes/n{number:04d}.md": f"# note {number}\n\nversion {version}: "
            + "the deploy runs after review; retry the queue worker. " * 20 + "\n"
            for number in range(count)}


def _write(client: HubClient, texts: dict[str, str]) -> None:
    current = {document["path"]: document["revision"] for document in
               client.call("/v1/memory/list", {"limit": 1000})["documents"]}
    for path, text in texts.items():
        client.call("/v1/memory/upsert", {"path": path, "content": text,
                                          "expected_revision": current.get(path, "absent")})


def _sync(client: HubClient) -> tuple[float, dict[str, Any]]:
    started = time.perf_counter()
    report = client.call("/v1/memory/sync", {})
    return time.perf_counter() - started, report


def _git(*args: str, cwd: Path | None = None) -> float:
    started = time.perf_counter()
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                   env={**os.environ, **GIT_ENV}, timeout=600)
    return time.perf_counter() - started


def _put(folder: Path, texts: dict[str, str]) -> None:
    for path, text in texts.items():
        target = folder / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)


def bench_sync(documents: int, rounds: int) -> dict[str, Any]:
    samples: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="amux-sync-bench-", dir="/tmp") as temp:
        work = Path(temp)
        bare, git_bare = work / "shared.git", work / "floor.git"
        for repository in (bare, git_bare):
            subprocess.run(["git", "init", "-q", "--bare", str(repository)], check=True)
        x, y = work / "x", work / "y"
        for clone in (x, y):
            subprocess.run(["git", "clone", "-q", str(git_bare), str(clone)], check=True,
                           capture_output=True)
        with hub_process(work / "a") as (_, a_connection), \
                hub_process(work / "b") as (_, b_connection), \
                HubClient(a_connection, timeout=900) as a, \
                HubClient(b_connection, timeout=900) as b:
            for client in (a, b):
                client.call("/v1/memory/remotes", {"action": "add", "name": "origin",
                                                   "url": str(bare)})
            _write(a, _texts(documents, 0))  # the first copy, untimed
            _sync(a)
            _sync(b)
            _put(x, _texts(documents, 0))
            _git("add", "-A", cwd=x)
            _git("commit", "-qm", "v0", cwd=x)
            _git("push", "-q", "origin", "HEAD", cwd=x)
            _git("pull", "-q", "origin", "HEAD", cwd=y)
            for round_number in range(1, rounds + 1):
                texts = _texts(documents, round_number)
                _write(a, texts)
                sent, _ = _sync(a)
                received, report = _sync(b)
                assert len(report["applied"]) == documents, report["refused"][:1]
                _put(x, texts)
                commit = _git("add", "-A", cwd=x) + _git("commit", "-qm", "v", cwd=x)
                push = _git("push", "-q", "origin", "HEAD", cwd=x)
                pull = _git("pull", "-q", "origin", "HEAD", cwd=y)
                for name, value in (("sync_send", sent), ("sync_receive", received),
                                    ("git_commit", commit), ("git_push", push),
                                    ("git_pull", pull)):
                    samples.setdefault(name, []).append(value)
    return {"documents": documents, "rounds": rounds,
            "bytes": sum(len(text) for text in _texts(documents, 1).values()),
            "ms": {name: timing.summarize(values) for name, values in samples.items()},
            "machine": {"python": sys.version.split()[0],
                        "load_average": timing.load_average(), "cpus": os.cpu_count()}}


def markdown(result: dict[str, Any]) -> str:
    rows = [("`amux memory sync` on the side that changed (fetch, push)", "sync_send"),
            ("`amux memory sync` on the other side (1,000 documents merged and written, "
             "merge commit, push)", "sync_receive"),
            ("floor: `git add -A && git commit`", "git_commit"),
            ("floor: `git push` (to a local bare repository)", "git_push"),
            ("floor: `git pull` (into a clone)", "git_pull")]
    return report.floor_table(
        f"{result['documents']:,} documents changed, {result['bytes']:,} bytes, "
        f"{result['rounds']} rounds (medians, ms)", result["ms"], rows, "git_pull", "git pull")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.sync_bench",
                                     description=__doc__)
    parser.add_argument("--documents", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args(argv)
    result = bench_sync(args.documents, args.rounds)
    report.emit(result, args.json, markdown(result) if args.markdown else None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
