"""The adapters' impure hooks, driven through a fake `Probe` (no files, no processes), and the
real `SystemProbe`. Codex's config layers: tests/adapters/test_codex_layers.py."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import pytest

from amux.adapters import ADAPTERS
from amux.launcher.probe import SystemProbe


class FakeProbe(SystemProbe):
    """The real probe's surroundings (env, cwd, executable, warnings) with files from a
    dict and commands answered from a dict of argv tuples (recorded in `ran` with their
    stdin): nothing is read from disk or run."""

    def __init__(self, files: dict[str, str], env: Mapping[str, str] | None = None,
                 cwd: str = "/work/project",
                 commands: dict[tuple[str, ...], tuple[int, str, str]] | None = None,
                 executable: str | None = None) -> None:
        super().__init__(env or {"HOME": "/home/u"}, cwd, executable=executable)
        self.files = files
        self.commands = commands or {}
        self.read: list[str] = []
        self.ran: list[tuple[tuple[str, ...], str]] = []

    def read_text(self, path: str) -> str | None:
        self.read.append(path)
        return self.files.get(path)

    def run(self, argv: Sequence[str], *, stdin: str = "", timeout: float,
            until: Callable[[str], bool] | None = None) -> tuple[int, str, str] | None:
        self.ran.append((tuple(argv), stdin))
        return self.commands.get(tuple(argv))


def test_codex_instructions_from_config_and_profile() -> None:
    codex = ADAPTERS["codex"]
    files = {"/c/config.toml": '# mine\ndeveloper_instructions = """\nUse tabs.\n"""\n',
             "/c/work.config.toml": 'developer_instructions = "Work rules."\n'}
    probe = FakeProbe(files, env={"CODEX_HOME": "/c"})
    assert codex.user_instructions(("exec", "hi"), probe) == ("Use tabs.\n",)
    assert codex.user_instructions(("--profile", "work", "exec"), probe) == ("Work rules.",)
    assert codex.user_instructions(("--profile=other", "exec"), probe) == ("Use tabs.\n",)
    assert codex.user_instructions((), FakeProbe({}, env={"HOME": "/h"})) == ()
    broken = FakeProbe({"/c/config.toml": "developer_instructions = [broken\n"},
                       env={"CODEX_HOME": "/c"})
    with pytest.raises(ValueError, match=r"cannot read Codex's /c/config\.toml"):
        codex.user_instructions((), broken)


def test_codex_home_defaults_to_the_users_dot_codex() -> None:
    probe = FakeProbe({"/home/u/.codex/config.toml": 'developer_instructions = "x"\n'})
    assert ADAPTERS["codex"].user_instructions((), probe) == ("x",)


def test_the_system_probe_reads_files_and_runs_commands(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("é\n", encoding="utf-8")
    probe = SystemProbe({"PATH": "/usr/bin:/bin", "X": "1"}, str(tmp_path))
    assert probe.read_text(str(tmp_path / "a.txt")) == "é\n"
    assert probe.read_text(str(tmp_path / "missing")) is None
    assert probe.run(["sh", "-c", 'echo "$X $(pwd)"; echo err >&2'], timeout=10) == (
        0, f"1 {tmp_path}\n", "err\n")
    assert probe.run(["/nonexistent/binary"], timeout=10) is None


SLOW_ANSWER = """import sys, threading, time, os
def answer(line):
    time.sleep(0.3)
    print("got " + line.strip(), flush=True)
for line in sys.stdin:
    threading.Thread(target=answer, args=(line,), daemon=True).start()
os._exit(0)
"""
"""A server like `codex app-server`: it answers a little later, but stops at end of input."""


def test_the_system_probe_keeps_stdin_open_until_the_answer(tmp_path: Path) -> None:
    probe = SystemProbe({"PATH": "/usr/bin:/bin"}, str(tmp_path))
    argv = [sys.executable, "-c", SLOW_ANSWER]
    assert probe.run(argv, stdin="hello\n", timeout=10) == (0, "", "")  # ended unanswered
    done = probe.run(argv, stdin="hello\n", timeout=10, until=lambda out: out.startswith("got"))
    assert done == (0, "got hello\n", "")


def test_the_system_probe_kills_what_outlives_its_timeout(tmp_path: Path) -> None:
    probe = SystemProbe({"PATH": "/usr/bin:/bin"}, str(tmp_path))
    started = time.monotonic()
    pid_file = tmp_path / "pid"
    assert probe.run(["sh", "-c", f"sleep 30 & echo $! > {pid_file}; wait"], timeout=0.5,
                     until=lambda line: False) is None
    assert time.monotonic() - started < 5
    pid = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(pid)  # the whole process group went, not only `sh`


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as stat:  # a zombie waiting for init counts as gone
        return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
