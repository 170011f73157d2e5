"""Waiting for something a test can observe: poll it, never sleep a fixed time for it.

A fixed sleep that remains in the tests is the test itself (time passing for a cache or a
grace period, a process that must still be running after it) and says so."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

import psutil

T = TypeVar("T")

INTERVAL = 0.02
"""Seconds between two looks: short against every wait the tests have (tenths of a second
at least), long enough not to compete with what they wait for on two shared cores."""


def wait_until(predicate: Callable[[], T], timeout: float, what: str, *,
               interval: float = INTERVAL) -> T:
    """`predicate()`'s first true value, looked at every `interval` seconds; after `timeout`
    seconds (and one last look) the test fails, naming `what` it waited for."""
    deadline = time.monotonic() + timeout
    while True:
        found = predicate()
        if found:
            return found
        if time.monotonic() >= deadline:
            raise AssertionError(f"waited {timeout:g} s for {what}: it never happened")
        time.sleep(interval)


def gone(pid: int) -> bool:
    """Whether process `pid` has ended (a zombie nobody reaped yet counts as ended)."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True
