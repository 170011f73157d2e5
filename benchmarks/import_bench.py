"""What `amux memory import` of 1,000 notes costs, against git moving the same files.

    python -m benchmarks.import_bench [--notes N] [--rounds N] [--json FILE] [--markdown]

The notes are a Claude Code store as the agent lays it out (`~/.claude/projects/<path>/
memory/`: a `MEMORY.md` index and topic files with front matter, 1-3 KiB each) under a
HOME of the benchmark's own. Each round, interleaved, on the same files:

- **import**: `amux memory import claude` (the dry run: a list, then one Hub check per
  note), `--apply` into an empty scope (one conditional upsert per note, history on),
  `--apply` again (writes nothing), and `amux memory export --dir` of the result, each a
  whole `amux` process against a fresh Hub (its start not timed);
- **floors**: `git add -A && git commit` of the same files into a new repository, `git
  push` of that commit to a bare repository, and `git pull` of it into a clone made before
  the commit (the issue's measure: a sync by git of the same data).
"""

from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks import report, timing
from benchmarks.hub_bench import amux_command, hub_process

GIT_ENV = {"GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.com",
           "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.com",
           "GIT_CONFIG_NOSYSTEM": "1"}
WORDS = ("deploy", "cache", "retry", "index", "checkout", "token-free", "build", "release",
         "staging", "schema", "migration", "review", "lint", "format", "queue", "worker",
         "timeout", "budget", "page", "search")


def make_store(home: Path, notes: int, seed: int = 7) -> tuple[Path, Path]:
    """A Claude Code store of `notes` notes (the index included) for a project whose
    repository has a remote; (the memory folder, the repository)."""
    rng = random.Random(seed)
    repo = home / "work" / "shop"
    repo.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(["git", "-C", str(repo), "remote", "add", "origin",
                    "git@github.com:acme/shop.git"], check=True)
    key = re.sub(r"[^a-zA-Z0-9]", "-", str(repo.resolve()))
    memory = home / ".claude" / "projects" / key / "memory"
    memory.mkdir(parents=True)
    index = []
    for number in range(notes - 1):
        kind = rng.choice(("feedback", "project", "reference", "user"))
        name = f"{kind}_{number:04}"
        body = " ".join(rng.choice(WORDS) for _ in range(rng.randint(120, 420)))
        (memory / f"{name}.md").write_text(
            f"---\nname: {name}\ndescription: note {number} about {rng.choice(WORDS)}\n"
            f"metadata:\n  type: {kind}\n---\n\n{body}\n**Why:** measured.\n")
        index.append(f"- [{name}]({name}.md) — {rng.choice(WORDS)}")
    (memory / "MEMORY.md").write_text("\n".join(index[:200]) + "\n")
    return memory, repo


def _run(argv: list[str], env: dict[str, str], cwd: Path | None = None) -> float:
    started = time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, check=False)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"{argv[:4]} exited {done.returncode}: {done.stderr[-500:]!r}")
    return elapsed


def _import_round(work: Path, home: Path, memory: Path) -> dict[str, float]:
    amux_home = Path(tempfile.mkdtemp(prefix="amux-ib-", dir="/tmp")) / "h"
    env = {**os.environ, "HOME": str(home), "AMUX_HOME": str(amux_home)}
    for name in ("AMUX_MEMORY_CONFIG", "AMUX_HUB", "AMUX_TOKEN"):
        env.pop(name, None)
    cli = amux_command()
    result: dict[str, float] = {}
    try:
        with hub_process(amux_home):
            result["dry_run"] = _run([*cli, "memory", "import", "claude"], env)
            result["apply"] = _run([*cli, "memory", "import", "claude", "--apply"], env)
            result["apply_again"] = _run([*cli, "memory", "import", "claude", "--apply"], env)
            out = work / f"export-{time.monotonic_ns()}"
            result["export"] = _run([*cli, "memory", "export", "--dir", str(out)], env)
            shutil.rmtree(out)
    finally:
        shutil.rmtree(amux_home.parent, ignore_errors=True)
    return result


def _git_round(work: Path, memory: Path) -> dict[str, float]:
    env = {**os.environ, **GIT_ENV, "HOME": str(work)}
    base = Path(tempfile.mkdtemp(prefix="git-", dir=work))
    bare, source, clone = base / "bare.git", base / "source", base / "clone"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(bare)], check=True, env=env)
    subprocess.run(["git", "clone", "-q", str(bare), str(clone)], check=True, env=env,
                   capture_output=True)
    shutil.copytree(memory, source)
    subprocess.run(["git", "init", "-q", "-b", "main", str(source)], check=True, env=env)
    subprocess.run(["git", "-C", str(source), "remote", "add", "origin", str(bare)],
                   check=True, env=env)
    result = {
        "git_commit": _run(["sh", "-c", "git add -A && git commit -q -m import"], env, source),
        "git_push": _run(["git", "push", "-q", "origin", "main"], env, source),
        "git_pull": _run(["git", "pull", "-q", "origin", "main"], env, clone),
    }
    shutil.rmtree(base)
    return result


def bench_import(notes: int, rounds: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="amux-import-bench-") as temp:
        work = Path(temp)
        home = work / "home"
        memory, _repo = make_store(home, notes)
        size = sum(path.stat().st_size for path in memory.iterdir())
        samples: dict[str, list[float]] = {}
        _import_round(work, home, memory)  # warm-up, untimed
        _git_round(work, memory)
        for _round in range(rounds):
            for name, value in {**_import_round(work, home, memory),
                                **_git_round(work, memory)}.items():
                samples.setdefault(name, []).append(value)
    return {"notes": notes, "bytes": size, "rounds": rounds,
            "ms": {name: timing.summarize(values) for name, values in samples.items()},
            "machine": {"python": sys.version.split()[0],
                        "load_average": timing.load_average(),
                        "cpus": os.cpu_count()}}


def markdown(result: dict[str, Any]) -> str:
    rows = [("`import claude` (dry run)", "dry_run"), ("`import claude --apply`", "apply"),
            ("`import claude --apply` again (writes nothing)", "apply_again"),
            ("`export --dir`", "export"), ("floor: `git add -A && git commit`", "git_commit"),
            ("floor: `git push` (to a local bare repository)", "git_push"),
            ("floor: `git pull` (into a clone)", "git_pull")]
    return report.floor_table(
        f"{result['notes']:,} notes, {result['bytes']:,} bytes, {result['rounds']} rounds "
        "(medians, ms, whole processes)", result["ms"], rows, "git_commit", "git commit")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.import_bench",
                                     description=__doc__)
    parser.add_argument("--notes", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args(argv)
    result = bench_import(args.notes, args.rounds)
    report.emit(result, args.json, markdown(result) if args.markdown else None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
