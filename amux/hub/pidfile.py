"""A pid recorded with its process's start time, so a reused pid is not taken for it.

`os.kill(pid, 0)` only says that *some* process has the pid: after enough forks
(or a reboot) it is an unrelated one, and an exited child nobody reaped (a
zombie) answers too. So every pid amux records for later (the Hub's
`run/hub.pid`, a run directory's `launcher.pid`) is written as `PID START`, START
being psutil's `create_time`, and `alive` checks both; a zombie counts as gone.
An older file holding the pid alone reads as "pid only" (`started` None): alive
while any live process has that pid, and never a target for a signal.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import psutil

TOLERANCE_SECONDS = 1.0
"""How far two readings of one process's start time may differ (psutil derives it
from the boot time, which each reader computes from the clock)."""


@dataclass(frozen=True)
class ProcessId:
    pid: int
    started: float | None
    """psutil's `create_time`; None for a pid-only record."""

    def render(self) -> str:
        return f"{self.pid}\n" if self.started is None else f"{self.pid} {self.started:.3f}\n"


def _started(pid: int) -> float | None:
    """The start time of the live process `pid`; None when there is none or a zombie."""
    try:
        process = psutil.Process(pid)
        if process.status() == psutil.STATUS_ZOMBIE:
            return None
        return process.create_time()
    except psutil.NoSuchProcess:
        return None


def identify(pid: int) -> ProcessId | None:
    """The live process `pid` with its start time, or None when there is none."""
    started = _started(pid)
    return None if started is None else ProcessId(pid, started)


def current() -> ProcessId:
    return ProcessId(os.getpid(), psutil.Process().create_time())


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
    except psutil.AccessDenied:  # someone else's process with that pid: cannot tell, keep it
        return True
    if started is None:
        return False
    return record.started is None or abs(started - record.started) <= TOLERANCE_SECONDS
