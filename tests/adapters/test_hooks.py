"""The adapters' impure hooks, driven through a fake `Probe` (no files, no processes)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from amux.adapters import ADAPTERS
from amux.launcher.probe import SystemProbe


class FakeProbe:
    """Files from a dict; commands answered from a dict of argv tuples."""

    def __init__(self, files: dict[str, str], env: Mapping[str, str] | None = None,
                 cwd: str = "/work/project",
                 commands: dict[tuple[str, ...], tuple[int, str, str]] | None = None) -> None:
        self.files = files
        self._env = dict(env or {"HOME": "/home/u"})
        self._cwd = cwd
        self.commands = commands or {}
        self.read: list[str] = []

    @property
    def env(self) -> Mapping[str, str]:
        return self._env

    @property
    def cwd(self) -> str:
        return self._cwd

    def read_text(self, path: str) -> str | None:
        self.read.append(path)
        return self.files.get(path)

    def run(self, argv: Sequence[str], *, stdin: str = "", timeout: float) -> (
        tuple[int, str, str] | None
    ):
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
