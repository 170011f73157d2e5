"""`amux hub start|stop|status|reload` and starting the local Hub on demand."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.hubproc import amux


@pytest.fixture
def home(short_home: Path) -> Iterator[Path]:
    yield short_home
    amux(short_home, "hub", "stop")


def test_status_start_race_reload_stop(home: Path) -> None:
    assert amux(home, "hub", "status") == (0, {"running": False}, "")
    environment = {**os.environ, "AMUX_HOME": str(home)}
    racers = [subprocess.Popen([sys.executable, "-m", "amux", "hub", "start"], env=environment,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
              for _ in range(2)]
    pids = set()
    for racer in racers:
        out, err = racer.communicate(timeout=60)
        assert racer.returncode == 0, err
        pids.add(json.loads(out)["pid"])
    assert len(pids) == 1  # one Hub, whichever racer started it
    code, status, _ = amux(home, "hub", "status")
    assert code == 0 and status["running"] is True and status["pid"] in pids
    assert status["log"] == str(home / "run" / "hub.log")  # where its messages go
    config = home / "config.toml"
    config.write_text("[memory]\nenabled = true\n")
    assert amux(home, "hub", "reload")[1]["memory_enabled"] is True
    code, stopped, _ = amux(home, "hub", "stop")
    assert (code, stopped["stopped"]) == (0, True)
    assert amux(home, "hub", "status")[1] == {"running": False,  # its log says why it ended
                                              "log": str(home / "run" / "hub.log")}
    assert not (home / "run" / "hub.sock").exists()


def test_memory_commands_start_the_local_hub_on_demand(home: Path) -> None:
    code, out, _ = amux(home, "system", "config", "set", "memory.enabled", "true")
    assert code == 0 and out["value"] is True  # started the Hub to answer
    code, put, _ = amux(home, "memory", "upsert", "a.md", "--expected-revision", "absent",
                        stdin="on demand\n")
    assert code == 0 and put["created"] is True
    assert amux(home, "hub", "status")[1]["running"] is True


def test_a_memory_call_tries_the_hub_first_and_starts_one_only_when_none_answers(
        home: Path) -> None:
    """Issue 14: with a Hub answering, a memory call neither checks for one nor imports the
    code that starts one; with none (never started, or killed: its socket file left
    behind), the call starts it and is answered."""
    def imports(*args: str) -> tuple[str, str]:
        done = subprocess.run([sys.executable, "-X", "importtime", "-m", "amux", *args],
                              env={**os.environ, "AMUX_HOME": str(home)},
                              capture_output=True, text=True, timeout=60)
        return done.stdout, done.stderr

    out, err = imports("memory", "search", "x")  # nothing configured yet: started
    assert json.loads(out)["error"]["code"] == "memory_disabled"
    assert "amux.hub.control" in err
    status = amux(home, "hub", "status")[1]
    assert status["running"] is True
    out, err = imports("memory", "search", "x")
    assert json.loads(out)["error"]["code"] == "memory_disabled"
    assert "amux.hub.control" not in err
    os.kill(status["pid"], 9)
    assert (home / "run" / "hub.sock").exists()  # a dead Hub's socket file
    out, _ = imports("memory", "search", "x")
    assert json.loads(out)["error"]["code"] == "memory_disabled"
    assert amux(home, "hub", "status")[1]["pid"] != status["pid"]


def test_an_explicit_hub_is_never_started(home: Path, tmp_path: Path) -> None:
    code, out, _ = amux(home, "memory", "show", "a.md",
                        env={"AMUX_HUB": f"unix:{tmp_path}/none.sock", "AMUX_TOKEN": "t"})
    assert (code, out["error"]["code"]) == (4, "hub_unreachable")
    assert amux(home, "hub", "status")[1] == {"running": False}  # none ever ran: no log
