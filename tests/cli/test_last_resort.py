"""A bug in the installed `amux` is one stderr line, exit 1 and a traceback in the log."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

BUGGY_AMUX = """\
import sys
import amux.cli.main

def bug(argv):
    raise RuntimeError("a bug\\nover two lines")

amux.cli.main._protocol_show = bug
sys.exit(amux.cli.main.main(["protocol", "show"]))
"""


def _amux(code: str, home: Path, **extra: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "AMUX_DEBUG"}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**env, "AMUX_HOME": str(home), **extra}, timeout=60)


def test_a_bug_is_one_line_and_a_logged_traceback(tmp_path: Path) -> None:
    home = tmp_path / "home"
    done = _amux(BUGGY_AMUX, home)
    log = home / "log" / "cli-errors.log"
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == (f"amux: internal: RuntimeError: a bug over two lines "
                           f"(a bug; details in {log})\n")
    text = log.read_text()
    assert "Traceback (most recent call last)" in text and "in bug" in text
    assert "RuntimeError: a bug\nover two lines" in text
    assert stat.S_IMODE(log.stat().st_mode) == 0o600
    assert stat.S_IMODE(log.parent.stat().st_mode) == 0o700


def test_amux_debug_shows_the_traceback(tmp_path: Path) -> None:
    done = _amux(BUGGY_AMUX, tmp_path / "home", AMUX_DEBUG="1")
    assert done.returncode == 1
    assert "Traceback (most recent call last)" in done.stderr
    assert not (tmp_path / "home").exists()
