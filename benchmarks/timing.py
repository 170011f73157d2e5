"""Timing helpers shared by the benchmarks: summaries, process timing, machine facts.

Medians and p90s rather than means, because one page-cache miss or one fsync
stall would otherwise dominate a mean of a few dozen samples; the JSON keeps the
raw samples so anyone can recompute whatever statistic they prefer.
"""

from __future__ import annotations

import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any


def percentile(samples: Sequence[float], fraction: float) -> float:
    """Linear-interpolated percentile (`fraction` in 0..1) of a non-empty sample."""
    ordered = sorted(samples)
    if len(ordered) == 1:
        return ordered[0]
    position = fraction * (len(ordered) - 1)
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def summarize(samples: Sequence[float]) -> dict[str, Any]:
    """p50/p90/p99/mean/min/max in milliseconds of samples taken in seconds (raw kept too)."""
    if not samples:
        return {"n": 0}
    return {
        "n": len(samples),
        "p50_ms": round(statistics.median(samples) * 1000, 3),
        "p90_ms": round(percentile(samples, 0.9) * 1000, 3),
        "p99_ms": round(percentile(samples, 0.99) * 1000, 3),
        "mean_ms": round(statistics.fmean(samples) * 1000, 3),
        "min_ms": round(min(samples) * 1000, 3),
        "max_ms": round(max(samples) * 1000, 3),
        "samples_ms": [round(s * 1000, 4) for s in samples],
    }


def median_ci(samples: Sequence[float], confidence: float = 0.95,
              resamples: int = 2000) -> tuple[float, float]:
    """A bootstrap confidence interval of the median of `samples` (percentile method, a
    fixed seed so a report can be recomputed): how far the median could move by chance."""
    import random

    chooser = random.Random(0)
    medians = sorted(statistics.median(chooser.choices(samples, k=len(samples)))
                     for _ in range(resamples))
    tail = (1 - confidence) / 2
    return percentile(medians, tail), percentile(medians, 1 - tail)


def timed(action: Callable[[], object]) -> tuple[float, object]:
    """Seconds `action` took, and what it returned."""
    started = time.perf_counter()
    result = action()
    return time.perf_counter() - started, result


def run_process(argv: Sequence[str]) -> tuple[float, subprocess.CompletedProcess[bytes]]:
    """Whole-process wall time of `argv`, its output read through a pipe as a caller would.

    Not /dev/null: the floor must pay for producing its answer, like the store does.
    """
    started = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, check=False)
    return time.perf_counter() - started, done


def interpreter_start(runs: int) -> dict[str, Any]:
    """Bare `python -c pass` (this interpreter, no pyenv shim), the CLI-start baseline."""
    variants = {
        "python -c pass": [sys.executable, "-c", "pass"],
        "python -I -S -c pass": [sys.executable, "-I", "-S", "-c", "pass"],
    }
    report: dict[str, Any] = {}
    for label, argv in variants.items():
        run_process(argv)  # warm-up: the binary and its stdlib in the page cache
        samples = [run_process(argv)[0] for _ in range(runs)]
        report[label] = {"argv": [Path(argv[0]).name, *argv[1:]], **summarize(samples)}
    return report


def filesystem_of(path: Path) -> dict[str, str]:
    """Mount point, type and device holding `path` (longest matching /proc mount)."""
    target = os.path.realpath(path)
    best = {"mount_point": "?", "type": "?", "device": "?"}
    try:
        lines = Path("/proc/self/mounts").read_text().splitlines()
    except OSError:
        return best
    length = -1
    for line in lines:
        fields = line.split()
        if len(fields) < 3:
            continue
        mount_point = fields[1].replace("\\040", " ")
        inside = target == mount_point or target.startswith(mount_point.rstrip("/") + "/")
        if inside and len(mount_point) > length:
            length = len(mount_point)
            best = {"mount_point": mount_point, "type": fields[2], "device": fields[0]}
    return best


def python_speed() -> float:
    """Milliseconds for one million `x += i` steps: a crude CPU yardstick for comparing
    reports from different machines (the store's search is pure Python)."""
    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        x = 0
        for i in range(1_000_000):
            x += i
        best = min(best, time.perf_counter() - started)
    return round(best * 1000, 1)


def load_average() -> list[float]:
    """1/5/15-minute load averages: other work on the machine skews every number."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:  # pragma: no cover
        return []


def rg_binary() -> str | None:
    """The `rg` the bench extra installed next to this interpreter, else one on PATH.

    Next to the interpreter first: on PATH there may be a version-manager shim (a
    shell script that execs the real binary), whose start-up would flatter us.
    """
    beside = Path(sys.executable).parent / "rg"
    if beside.exists():
        return str(beside)
    return shutil.which("rg")


def machine_info(corpus_dir: Path) -> dict[str, Any]:
    """The facts a reader needs to compare two reports: CPU, Python, rg, filesystem."""
    rg = rg_binary()
    rg_version = "not found"
    if rg is not None:
        done = subprocess.run([rg, "--version"], capture_output=True, text=True, check=False)
        rg_version = done.stdout.splitlines()[0] if done.stdout else "unknown"
    cpu = "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        usable = os.cpu_count() or 0
    return {
        "date_utc": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        "nproc": usable,
        "cpu": cpu,
        "kernel": f"{platform.system()} {platform.release()}",
        "python": f"Python {platform.python_version()} ({sys.executable})",
        "rg": rg_version,
        "filesystem": filesystem_of(corpus_dir),
        "python_loop_1m_ms": python_speed(),
        "load_average": load_average(),
    }
