"""What `amux run` adds to an agent's start (issue 5's number).

A trivial agent (a shell script that exits 0) is run directly and through the
installed `amux run`, interleaved, against the Hub serving the benchmark corpus:

- named `pi`: the full memory path, binding resolution, delegated token, run
  directory, session state written, plan, supervision, revocation and cleanup;
- with any other name: the fallback adapter (no memory, a warning, supervision).

Target: median extra ≤ 150 ms for the memory path.

As root, the same agent also runs isolated as a throwaway Unix user
(`amux run --as-user`: grant over the shared socket, run directory with the client
copy, spawn as the user, revocation, cleanup), against the plain memory-path
launch. Target: median extra ≤ 100 ms (issue 6).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
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


@contextlib.contextmanager
def _throwaway_user(home: Path) -> Iterator[str | None]:
    """A Unix user with an amux principal, for the isolated launch; None unless root."""
    if os.geteuid() != 0 or shutil.which("useradd") is None:
        yield None
        return
    name = f"amuxbench-{os.urandom(3).hex()}"
    subprocess.run(["useradd", "--create-home", "--shell", "/bin/sh", name], check=True,
                   capture_output=True)
    try:
        env = {**os.environ, "AMUX_HOME": str(home)}
        subprocess.run([*amux_command(), "principal", "add", name], env=env, check=True,
                       capture_output=True)
        yield name
    finally:
        subprocess.run(["userdel", "--remove", name], capture_output=True)


def bench_launch(home: Path, runs: int) -> dict[str, Any]:
    amux = amux_command()
    with tempfile.TemporaryDirectory(prefix="amux-bench-agents-") as directory, \
            _throwaway_user(home) as user:
        agents = Path(directory)
        agents.chmod(0o755)
        for name in ("pi", "trivial-agent"):
            script = agents / name
            script.write_text("#!/bin/sh\nexit 0\n")
            script.chmod(0o755)
        env = {key: value for key, value in os.environ.items()
               if key not in ("AMUX_MEMORY_CONFIG", "AMUX_HUB", "AMUX_TOKEN")}
        runs_dir = agents / "runs"
        env.update({"AMUX_HOME": str(home), "PATH": f"{agents}{os.pathsep}{env['PATH']}",
                    "AMUX_RUNS_DIR": str(runs_dir)})
        commands = {
            "direct": [str(agents / "pi")],
            "amux run (memory)": [*amux, "run", "pi"],
            "amux run (fallback)": [*amux, "run", "trivial-agent"],
        }
        if user is not None:
            commands["amux run --as-user (isolated)"] = [*amux, "run", "--as-user", user,
                                                         str(agents / "pi")]
        samples: dict[str, list[float]] = {name: [] for name in commands}
        for argv in commands.values():
            _timed(argv, env)  # warm-up
        for _ in range(runs):
            for name, argv in commands.items():
                samples[name].append(_timed(argv, env))
    result: dict[str, Any] = {name: timing.summarize(values) for name, values in samples.items()}
    result["runs"] = runs
    result["isolated"] = user is not None
    return result
