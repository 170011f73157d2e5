"""The adapters' impure hooks, driven through a fake `Probe` (no files, no processes), and the
real `SystemProbe`. Codex's config layers: tests/adapters/test_codex_layers.py."""

from __future__ import annotations

import json
import os
import signal
import stat
import sys
import time
from pathlib import Path

import pytest

from amux.adapters import ADAPTERS
from amux.envpatch import EnvPatch
from amux.launcher.probe import CACHE_ENTRIES, SystemProbe
from amux.launcher.supervise import RunAs
from tests.adapting import FakeProbe
from tests.wait import gone, wait_until


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
    # the whole process group goes, not only `sh`
    wait_until(lambda: gone(pid), 5, "the backgrounded `sleep` to be killed")



def test_an_answered_command_is_killed_after_its_exit_grace(tmp_path: Path) -> None:
    """Codex's app-server takes 7–11 ms to exit once its input ends: the hook need not wait."""
    probe = SystemProbe({"PATH": "/usr/bin:/bin"}, str(tmp_path))
    lingers = "import time; print('got it', flush=True); time.sleep(30)"
    started = time.monotonic()
    done = probe.run([sys.executable, "-c", lingers], stdin="hello\n", timeout=10,
                     until=lambda line: line.startswith("got"), exit_grace=0)
    assert done == (-signal.SIGKILL, "got it\n", "")
    assert time.monotonic() - started < 5


def test_the_system_probe_changes_a_commands_environment(tmp_path: Path) -> None:
    probe = SystemProbe({"PATH": "/usr/bin:/bin", "B": "2"}, str(tmp_path))
    assert probe.run(["sh", "-c", 'echo "$A ${B-unset}"'], timeout=10,
                     env=EnvPatch({"A": "1"}, ("B",))) == (0, "1 unset\n", "")
    assert probe.env["B"] == "2"


def test_the_system_probe_remembers_in_its_cache_file(tmp_path: Path) -> None:
    cache = tmp_path / "cache" / "probe.json"
    SystemProbe({}, str(tmp_path), cache=cache).remember("k", "v")
    assert SystemProbe({}, str(tmp_path), cache=cache).recall("k") == "v"
    assert stat.S_IMODE(cache.stat().st_mode) == 0o600
    assert stat.S_IMODE(cache.parent.stat().st_mode) == 0o700
    # another user's commands may read other files: their answers are kept apart
    other = SystemProbe({}, str(tmp_path), cache=cache, run_as=RunAs(os.geteuid() + 1, 0, ()))
    assert other.recall("k") is None
    # the most recently remembered CACHE_ENTRIES are kept
    probe = SystemProbe({}, str(tmp_path), cache=cache)
    for n in range(CACHE_ENTRIES + 5):
        probe.remember(f"k{n}", str(n))
        if n == 3:
            probe.remember("k", "again")
    fresh = SystemProbe({}, str(tmp_path), cache=cache)
    assert len(json.loads(cache.read_text())) == CACHE_ENTRIES
    assert fresh.recall("k0") is None and fresh.recall("k") is None
    assert fresh.recall(f"k{CACHE_ENTRIES + 4}") == str(CACHE_ENTRIES + 4)
    # a corrupt or unreadable cache is an empty one, and is replaced by the next answer
    for corrupt in (b"{not json", b"[1, 2]", b'{"0:k": 1}', b"\xff"):
        cache.write_bytes(corrupt)
        assert SystemProbe({}, str(tmp_path), cache=cache).recall("k") is None
    SystemProbe({}, str(tmp_path), cache=cache).remember("k", "v")
    assert SystemProbe({}, str(tmp_path), cache=cache).recall("k") == "v"
    # a cache that cannot be written is none; no cache at all is none either
    blocked = SystemProbe({}, str(tmp_path), cache=cache / "under-a-file")
    blocked.remember("k", "v")
    assert blocked.recall("k") is None
    nothing = SystemProbe({}, str(tmp_path))
    nothing.remember("k", "v")
    assert nothing.recall("k") is None


def test_the_system_probe_signs_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    probe = SystemProbe({}, str(tmp_path))
    path = tmp_path / "config.toml"
    assert probe.stat_signature(str(path)) == "absent"
    assert probe.stat_signature(str(path / "below")) == "absent"
    assert probe.list_dir(str(path)) == []
    path.write_text("a = 1\n")
    assert probe.stat_signature(str(path)) is None  # just changed: its times cannot tell
    monkeypatch.setattr("amux.launcher.userfiles.RECENT_CHANGE_SECONDS", 0.0)
    signed = probe.stat_signature(str(path))
    assert signed is not None and signed != "absent"
    assert probe.stat_signature(str(path / "below")) == "absent"
    folder = probe.stat_signature(str(tmp_path))
    (tmp_path / "other").write_text("")
    assert probe.stat_signature(str(tmp_path)) == folder  # its entries are signed apart
    assert probe.list_dir(str(tmp_path)) == ["config.toml", "other"]
    seen: set[str | None] = {signed}
    path.write_text("a = 22\n")  # edited in place
    seen.add(probe.stat_signature(str(path)))
    replacement = tmp_path / "new"
    replacement.write_text("a = 22\n")
    replacement.replace(path)  # replaced
    seen.add(probe.stat_signature(str(path)))
    path.chmod(0o000)
    seen.add(probe.stat_signature(str(path)))
    assert len(seen) == 4
    link = tmp_path / "link"
    link.symlink_to("config.toml")
    via_link = probe.stat_signature(str(link))
    assert via_link is not None and via_link.endswith(probe.stat_signature(str(path)) or "?")
    link.unlink()
    link.symlink_to("missing")
    assert str(probe.stat_signature(str(link))).endswith("|absent")
