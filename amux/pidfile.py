"""A pid recorded with its process's start time, so a reused pid is not taken for it.

`os.kill(pid, 0)` only says that *some* process has the pid: after enough forks
(or a reboot) it is an unrelated one, and an exited child nobody reaped (a
zombie) answers too. So every pid amux records for later (the Hub's
`run/hub.pid`, a run directory's `launcher.pid`) is written as `PID START`, START
being psutil's `create_time`, and `alive` checks both; a zombie counts as gone.
An older file holding the pid alone reads as "pid only" (`started` None): alive
while any live process has that pid, and never a target for a signal.

On Linux the start time and state are read from `/proc/<pid>/stat` and the boot
time from `/proc/stat`, exactly as psutil computes `create_time` there: every
`amux run` records and checks pids, and importing psutil costs it ~12 ms.
Elsewhere psutil answers.
"""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path

from amux.typing_light import NamedTuple

TOLERANCE_SECONDS = 1.0
"""How far two readings of one process's start time may differ (psutil derives it
from the boot time, which each reader computes from the clock)."""


class ProcessId(NamedTuple):
    pid: int
    started: float | None
    """psutil's `create_time`; None for a pid-only record."""

    def render(self) -> str:
        return f"{self.pid}\n" if self.started is None else f"{self.pid} {self.started:.3f}\n"


class _Unreadable(Exception):
    """Whether `pid` runs cannot be told (another user's process, where psutil says so)."""


@cache
def _boot_time() -> float | None:
    """The boot time as /proc/stat says (psutil's `boot_time` on Linux), None without it."""
    try:
        with open("/proc/stat", encoding="ascii") as stat:
            return next(float(line.split()[1]) for line in stat if line.startswith("btime "))
    except (OSError, StopIteration, ValueError, IndexError):
        return None


def _started(pid: int) -> float | None:
    """The start time of the live process `pid`; None when there is none or a zombie."""
    boot = _boot_time()
    if boot is not None:
        try:
            with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat:
                fields = stat.read().rpartition(")")[2].split()
        except (FileNotFoundError, ProcessLookupError):
            return None
        except OSError:
            fields = []
        if len(fields) > 19 and fields[19].isdigit():
            if fields[0] in ("Z", "X"):  # a zombie, or dead
                return None
            return boot + int(fields[19]) / os.sysconf("SC_CLK_TCK")
    return _psutil_started(pid)


def _psutil_started(pid: int) -> float | None:
    import psutil  # where /proc does not answer

    try:
        process = psutil.Process(pid)
        if process.status() == psutil.STATUS_ZOMBIE:
            return None
        return process.create_time()
    except psutil.NoSuchProcess:
        return None
    except psutil.AccessDenied:
        raise _Unreadable from None


def identify(pid: int) -> ProcessId | None:
    """The live process `pid` with its start time, or None when there is none."""
    started = _started(pid)
    return None if started is None else ProcessId(pid, started)


def current() -> ProcessId:
    started = _started(os.getpid())
    assert started is not None  # we are running
    return ProcessId(os.getpid(), started)


def parse(text: str) -> ProcessId | None:
    """`PID START` or an old `PID`; None for anything else."""
    fields = text.split()
    try:
        pid = int(fields[0])
        started = float(fields[1]) if len(fields) == 2 else None
    except (IndexError, ValueError):
        return None
    if pid <= 0 or len(fields) > 2:
        return None
    return ProcessId(pid, started)


def read(path: Path) -> ProcessId | None:
    try:
        return parse(path.read_text(encoding="ascii", errors="replace"))
    except OSError:
        return None


def alive(record: ProcessId) -> bool:
    """Is the recorded process still running (same pid, same start time, not a zombie)?"""
    try:
        started = _started(record.pid)
    except _Unreadable:  # someone else's process with that pid: cannot tell, keep it
        return True
    if started is None:
        return False
    return record.started is None or abs(started - record.started) <= TOLERANCE_SECONDS
