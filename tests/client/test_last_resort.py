"""A bug in a command is one stderr line and a logged traceback, never a Python traceback."""

from __future__ import annotations

import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from amux.client import cli
from amux.client.bundle import build_client

LINE = "amux: internal: ValueError: bad thing (a bug; details in {log})\n"


def _bug() -> int:
    raise ValueError("bad\nthing")


@pytest.fixture(autouse=True)
def no_debug(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AMUX_DEBUG", raising=False)


def test_a_bug_is_one_line_and_a_logged_traceback(
        isolated_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.last_resort(_bug) == 1
    log = isolated_home / "amux" / "log" / "cli-errors.log"
    assert capsys.readouterr() == ("", LINE.format(log=log))
    assert cli.crash_log_path() == str(log)
    text = log.read_text()
    assert "Traceback (most recent call last)" in text and "in _bug" in text
    assert stat.S_IMODE(log.stat().st_mode) == 0o600
    assert stat.S_IMODE(log.parent.stat().st_mode) == 0o700
    assert cli.last_resort(_bug) == 1
    assert log.read_text().count("ValueError: bad") == 2  # appended


def test_the_log_moves_aside_before_it_passes_the_cap(isolated_home: Path) -> None:
    log = isolated_home / "amux" / "log" / "cli-errors.log"
    log.parent.mkdir(parents=True)
    log.write_text("x" * (cli.CRASH_LOG_MAX_BYTES - 10))
    assert cli.last_resort(_bug) == 1
    assert log.with_name("cli-errors.log.1").read_text() == "x" * (cli.CRASH_LOG_MAX_BYTES - 10)
    assert "ValueError: bad" in log.read_text()
    assert log.stat().st_size < cli.CRASH_LOG_MAX_BYTES


def test_an_unwritable_log_is_said_on_the_same_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("AMUX_HOME", str(tmp_path / "file" / "home"))
    assert cli.last_resort(_bug) == 1
    err = capsys.readouterr().err
    assert err.startswith("amux: internal: ValueError: bad thing (a bug; its traceback could "
                          "not be logged: NotADirectoryError: ")
    assert err.count("\n") == 1


def test_interrupt_exit_and_debug(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    def interrupted() -> int:
        raise KeyboardInterrupt

    def exits() -> int:
        sys.exit(3)

    assert cli.last_resort(interrupted) == 130
    with pytest.raises(SystemExit) as exited:
        cli.last_resort(exits)
    assert exited.value.code == 3
    assert capsys.readouterr() == ("", "")
    monkeypatch.setenv("AMUX_DEBUG", "1")
    with pytest.raises(ValueError, match="bad"):
        cli.last_resort(_bug)


def test_a_broken_pipe_that_is_not_stdout_is_a_bug(capsys: pytest.CaptureFixture[str]) -> None:
    def broken() -> int:
        raise BrokenPipeError("the Hub's socket")

    assert cli.last_resort(broken) == 1
    assert capsys.readouterr().err.startswith("amux: internal: BrokenPipeError: ")


def test_a_closed_stdout_exits_141_quietly(tmp_path: Path) -> None:
    code = ("import sys; from amux.client.cli import last_resort\n"
            "def flood():\n"
            "    while True: sys.stdout.write('x' * 4096)\n"
            "sys.exit(last_resort(flood))\n")
    env = {**os.environ, "AMUX_HOME": str(tmp_path / "home")}
    with subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, env=env) as child:
        assert child.stdout is not None and child.stderr is not None
        child.stdout.read(10)
        child.stdout.close()
        err = child.stderr.read()
        assert (child.wait(timeout=30), err) == (141, b"")
    assert not (tmp_path / "home").exists()  # not a bug: nothing logged


def test_the_single_file_client_reports_a_bug_alone(tmp_path: Path) -> None:
    """The bundled copy, run with no site-packages, catches and logs on its own."""
    bundle = build_client(tmp_path / "amux-client.pyz")
    home = tmp_path / "home"
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import amux.client.cli as cli\n"
            "def bug(args, start_hub=None): raise ValueError('bad thing')\n"
            "cli.COMMANDS['search'].run = bug\n"
            "sys.exit(cli.main(['search', 'x']))\n")
    done = subprocess.run([sys.executable, "-I", "-S", "-c", code, str(bundle)],
                          capture_output=True, text=True, timeout=60,
                          env={"PATH": os.environ.get("PATH", ""), "AMUX_HOME": str(home)})
    log = home / "log" / "cli-errors.log"
    assert (done.returncode, done.stdout, done.stderr) == (1, "", LINE.format(log=log))
    text = log.read_text()
    # The bundle's bytecode names its modules inside the bundle (amux/client/…); the lines
    # still come from the sources beside it.
    assert 'File "amux/client/cli.py"' in text and "ValueError: bad thing" in text
    assert re.search(r'File "amux/client/cli\.py", line \d+, in \w+\n    \S', text), text
    assert stat.S_IMODE(log.stat().st_mode) == 0o600
