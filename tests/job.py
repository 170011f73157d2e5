"""Start a child as an interactive shell starts a foreground job: SIGINT and SIGQUIT at
their defaults, whatever this test run ignores (a shell without job control ignores both
in a job started with `&`; `nohup`, SIGHUP). Tests that press Ctrl-C or send SIGINT
depend on it, so they set it themselves."""

from __future__ import annotations

import sys

_JOB = ("import os, signal, sys\n"
        "for sig in (signal.SIGINT, signal.SIGQUIT):\n"
        "    signal.signal(sig, signal.SIG_DFL)\n"
        "os.execvp(sys.argv[1], sys.argv[1:])\n")


def as_job(*argv: str) -> list[str]:
    """`argv` run through a small exec wrapper that resets the dispositions (thread-safe,
    unlike a `preexec_fn` in a pytest-xdist worker, which runs threads)."""
    return [sys.executable, "-c", _JOB, *argv]
