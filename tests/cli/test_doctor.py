"""`amux doctor` as a command (`doctor_main` in its own process): a real Hub or none, the
real pinned agents, exit codes, the human report and the JSON shape."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from amux.adapters import ADAPTERS
from tests.hubproc import HubProcess
from tests.peers import node22_dir, npm_bin

DOCTOR = "import sys; from amux.cli.doctor import doctor_main; sys.exit(doctor_main(sys.argv[1:]))"
AGENTS = list(ADAPTERS)


def doctor(home: Path, *args: str, path: str | None = None) -> tuple[int, str]:
    """(exit status, stdout) of `amux doctor ARGS` for AMUX_HOME=home, the pinned agents
    first on PATH, then the Node 22 Pi 1.x needs (the README says so), unless `path` is
    given."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("AMUX_")}
    env.update(AMUX_HOME=str(home), COLUMNS="200",
               PATH=path or f"{npm_bin('claude').parent}:{node22_dir()}:/usr/local/bin:"
                            "/usr/bin:/bin")
    done = subprocess.run([sys.executable, "-c", DOCTOR, *args], capture_output=True,
                          text=True, env=env, timeout=60)
    return done.returncode, done.stdout


def as_json(home: Path, path: str | None = None) -> tuple[int, dict[str, Any]]:
    status, out = doctor(home, "--json", path=path)
    return status, json.loads(out)


def test_all_well_with_a_hub_memory_on_and_the_pinned_agents(memory_hub: HubProcess) -> None:
    started = time.monotonic()
    status, result = as_json(memory_hub.home)
    assert time.monotonic() - started < 20  # a few seconds; generous on a loaded machine
    assert status == 0 and result["ok"] is True
    assert set(result) == {"ok", "hub", "caller", "memory", "agents", "findings"}
    assert result["hub"]["running"] and result["hub"]["memory_enabled"]
    assert result["caller"]["binding"] == "global"
    assert result["memory"]["scope"] == "global"
    assert [agent["name"] for agent in result["agents"]] == AGENTS
    for agent in result["agents"]:
        assert agent["found"] and agent["version"]
        assert {"kind", "name", "why", "help_args", "present", "where"} <= set(
            agent["requirements"][0])
        assert all(r["present"] is True for r in agent["requirements"])
    assert all(f["severity"] == "note" for f in result["findings"])
    status, out = doctor(memory_hub.home)
    assert status == 0
    assert ("All well." if not result["findings"] else "No problems;") in out
    assert all(name in out for name in ("Hub", "Caller", "Memory", *AGENTS))


def test_notes_are_not_called_all_well(memory_hub: HubProcess) -> None:
    """It said "4 findings (4 warning)" and then "All well."."""
    from tests.hubproc import amux

    for name in ("a", "b"):
        amux(memory_hub.home, "memory", "upsert", f"notes/{name}.md", "--expected-revision",
             "absent", stdin=f"# {name}\nno description\n")
    status, out = doctor(memory_hub.home)
    assert status == 0, out
    assert "All well." not in out
    assert "scope global: 3 findings (2 warnings, 1 note)" in out
    notes = len(as_json(memory_hub.home)[1]["findings"])  # and any Node ones
    assert out.rstrip().splitlines()[-1] == (
        f"No problems; {notes} note{'s' if notes != 1 else ''} above, worth a look.")


def test_without_a_hub_it_names_the_command_that_starts_one(tmp_path: Path) -> None:
    status, result = as_json(tmp_path / "home")
    assert status == 1 and result["ok"] is False
    assert result["hub"] == {"running": False} and result["memory"] is None
    assert [(f["check"], f["fix"]) for f in result["findings"]
            if "declares node" not in f["message"]] == [("hub", "amux hub start")]
    assert not (tmp_path / "home").exists()  # read-only: no Hub, no home
    status, out = doctor(tmp_path / "home")
    assert status == 1 and "not running" in out and "fix: amux hub start" in out


def test_memory_off_needs_attention(hub: HubProcess) -> None:
    status, out = doctor(hub.home)
    assert status == 1
    assert "memory off" in out and "fix: amux system config set memory.enabled true" in out


def test_a_missing_agent_is_a_note_unless_none_is_found(memory_hub: HubProcess,
                                                    tmp_path: Path) -> None:
    only = tmp_path / "bin"
    only.mkdir()
    for name in ("claude", "codex"):
        (only / name).symlink_to(npm_bin(name))
    status, result = as_json(memory_hub.home, path=f"{only}:/usr/local/bin:/usr/bin:/bin")
    assert status == 0  # a user need not have them all: the missing ones are notes
    pi = result["agents"][AGENTS.index("pi")]
    assert pi["found"] is False
    notes = [f for f in result["findings"]
             if f["severity"] == "note" and "declares node" not in f["message"]]
    assert [f["check"] for f in notes] == [f"agent {name}" for name in AGENTS
                                            if name not in ("claude", "codex")]
    assert all(f["fix"] for f in notes)
    # With none of them on PATH, each is a problem: `amux run` has nothing to start.
    status, result = as_json(memory_hub.home, path=f"{tmp_path}/empty:/usr/bin:/bin")
    assert status == 1
    assert {f["check"] for f in result["findings"] if f["severity"] == "problem"} == {
        f"agent {name}" for name in AGENTS}


def test_a_usage_error_exits_2(tmp_path: Path) -> None:
    status, out = doctor(tmp_path, "--bogus")
    assert status == 2 and json.loads(out)["error"]["code"] == "invalid_argument"


def test_a_terminal_sees_that_it_is_working_and_a_pipe_sees_nothing(tmp_path: Path) -> None:
    """The checks take seconds: on a terminal a spinner on stderr says what runs; piped,
    stderr stays empty."""
    import pty
    import select

    controller, terminal = pty.openpty()
    env = {key: value for key, value in os.environ.items() if not key.startswith("AMUX_")}
    env.update(AMUX_HOME=str(tmp_path / "home"), TERM="xterm")
    try:
        child = subprocess.Popen([sys.executable, "-c", DOCTOR], stdout=subprocess.PIPE,
                                 stderr=terminal, stdin=subprocess.DEVNULL, env=env, text=True)
        shown = b""
        while b"checking the Hub" not in shown and select.select([controller], [], [], 30)[0]:
            shown += os.read(controller, 4096)
        child.communicate(timeout=60)
    finally:
        os.close(terminal)
        os.close(controller)
    assert b"checking the Hub, your scope and the agents" in shown
    piped = subprocess.run([sys.executable, "-c", DOCTOR], capture_output=True, text=True,
                           env=env, timeout=60)
    assert piped.stderr == ""
