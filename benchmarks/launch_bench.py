"""What `amux run` adds to an agent's start (issue 5's number).

A trivial agent (a shell script that exits 0) is run directly and through the
installed `amux run`, interleaved, against the Hub serving the benchmark corpus:

- named `pi`: the full memory path, binding resolution, delegated token, run
  directory, session state written, plan, supervision, revocation and cleanup;
- with any other name: the fallback adapter (no memory, a warning, supervision).

Target: median extra ≤ 150 ms for the memory path.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks import timing
from benchmarks.hub_bench import amux_command


def _timed(argv: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, stdin=subprocess.DEVNULL,
                          check=False)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"{argv[:3]} failed: {done.stderr[-300:]!r}")
    return elapsed


def bench_launch(home: Path, runs: int) -> dict[str, Any]:
    amux = amux_command()
    with tempfile.TemporaryDirectory(prefix="amux-bench-agents-") as directory:
        agents = Path(directory)
        for name in ("pi", "trivial-agent"):
            script = agents / name
            script.write_text("#!/bin/sh\nexit 0\n")
            script.chmod(0o755)
        env = {key: value for key, value in os.environ.items()
               if key not in ("AMUX_MEMORY_CONFIG", "AMUX_HUB", "AMUX_TOKEN")}
        env.update({"AMUX_HOME": str(home), "PATH": f"{agents}{os.pathsep}{env['PATH']}"})
        commands = {
            "direct": [str(agents / "pi")],
            "amux run (memory)": [*amux, "run", "pi"],
            "amux run (fallback)": [*amux, "run", "trivial-agent"],
        }
        samples: dict[str, list[float]] = {name: [] for name in commands}
        for argv in commands.values():
            _timed(argv, env)  # warm-up
        for _ in range(runs):
            for name, argv in commands.items():
                samples[name].append(_timed(argv, env))
    result: dict[str, Any] = {name: timing.summarize(values) for name, values in samples.items()}
    result["runs"] = runs
    return result
