"""Small scripted agents named like the real ones (the adapter is chosen by the command's
name), and `amux run` against a real Hub with them first on PATH: what the launcher tests
drive. Each records what it was given; `FAKE_AGENT_ACTION` makes it use memory, list the
files it found, wait, talk to a terminal or kill the Hub under its session; `FAKE_AGENT_EXIT`
and `FAKE_AGENT_SECONDS` how it ends and when."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.agentlog import KEEPS_SESSION
from tests.hubproc import HubProcess

FAKE_AGENT = '''#!{python}
import json, os, subprocess, sys
if sys.argv[1:] == ["--version"]:
    print("fake-agent 1.0")
    sys.exit(0)
record = {{"argv": sys.argv[1:], "env": {{k: v for k, v in os.environ.items()
          if k.startswith(("AMUX_", "CLAUDE_")) or k == "PATH"}}}}
action = os.environ.get("FAKE_AGENT_ACTION", "")
if action == "tree":  # what is there as it starts (its run directory goes when it exits)
    record["tree"] = subprocess.run(json.loads(os.environ["FAKE_AGENT_TREE"]),
                                    capture_output=True, text=True).stdout
{keeps_session}
if action == "kill-hub":  # the Hub dies under the session, then the agent saves
    import signal, socket, time
    os.kill(int(os.environ["FAKE_KILL_PID"]), signal.SIGKILL)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:  # until its socket refuses
        probe = socket.socket(socket.AF_UNIX)
        try:
            probe.connect(os.environ["FAKE_HUB_SOCKET"])
        except OSError:
            break
        finally:
            probe.close()
        time.sleep(0.02)
    action = "upsert"
if action == "upsert":
    done = subprocess.run(["amux", "memory", "upsert", "notes/agent.md",
                           "--expected-revision", "absent"], input=b"written by the agent\\n",
                          capture_output=True)
    record["upsert"] = {{"code": done.returncode, "out": done.stdout.decode(),
                        "err": done.stderr.decode()}}
    record["which"] = subprocess.run(["which", "amux"], capture_output=True,
                                     text=True).stdout.strip()
with open(os.environ["FAKE_AGENT_LOG"], "a") as log:
    log.write(json.dumps(record) + "\\n")
if action == "interactive":
    line = input("ready> ")
    print("got: " + line, flush=True)
if action in ("interactive", "wait"):
    import time
    with open(os.environ["FAKE_AGENT_LOG"] + ".pid", "w") as pid:
        pid.write(str(os.getpid()))
    time.sleep(60)
if os.environ.get("FAKE_AGENT_SECONDS"):  # slow to fail
    import time
    time.sleep(float(os.environ["FAKE_AGENT_SECONDS"]))
sys.exit(int(os.environ.get("FAKE_AGENT_EXIT", "0")))
'''


class Launcher:
    """Runs `python -m amux run …` with AMUX_HOME at the Hub's home and fake agents on PATH."""

    def __init__(self, home: Path, tmp_path: Path) -> None:
        self.home = home
        self.bin = tmp_path / "agents"
        self.bin.mkdir()
        self.log = tmp_path / "agent.log"
        for name in ("pi", "claude", "codex", "gemini", "my-agent"):
            script = self.bin / name
            script.write_text(FAKE_AGENT.format(python=sys.executable,
                                                keeps_session=KEEPS_SESSION))
            script.chmod(0o755)

    def run(self, *args: str, env: dict[str, str] | None = None, cwd: Path | None = None,
            python_flags: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
        environment = {k: v for k, v in os.environ.items()
                       if k not in ("AMUX_MEMORY_CONFIG", "AMUX_HUB", "AMUX_TOKEN")}
        environment.update({"AMUX_HOME": str(self.home), "FAKE_AGENT_LOG": str(self.log),
                            "PATH": f"{self.bin}{os.pathsep}{environment['PATH']}",
                            "CODEX_HOME": str(self.home.parent / "codex-home"),
                            **(env or {})})
        return subprocess.run([sys.executable, *python_flags, "-m", "amux", "run", *args],
                              capture_output=True, text=True, env=environment, timeout=120,
                              stdin=subprocess.DEVNULL, cwd=cwd)

    def records(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.log.read_text().splitlines()]

    def sessions(self) -> list[Path]:
        root = self.home / "sessions"
        return sorted(root.iterdir()) if root.is_dir() else []


def enable(hub: HubProcess, on: bool = True) -> None:
    hub.call("/v1/admin/config", {"action": "set", "key": "memory.enabled",
                                  "value": "true" if on else "false"})


def sessions_cli(hub: HubProcess, *args: str) -> Any:
    environment = {**os.environ, "AMUX_HOME": str(hub.home)}
    done = subprocess.run([sys.executable, "-m", "amux", "sessions", *args],
                          capture_output=True, text=True, env=environment, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)
