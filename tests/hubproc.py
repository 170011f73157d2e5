"""A real Hub process for tests: started on a short temp AMUX_HOME, spoken to over its socket."""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any


class UnixConnection(http.client.HTTPConnection):
    """http.client over a Unix socket (test side only; the amux client is separate)."""

    def __init__(self, path: str) -> None:
        super().__init__("localhost", timeout=10)
        self.unix_path = path

    def connect(self) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(10)
        self.sock.connect(self.unix_path)


class Caller:
    """Raw JSON requests to one Hub socket, with a default token."""

    def __init__(self, socket_path: str, token: str) -> None:
        self.connection = UnixConnection(socket_path)
        self.token = token

    def call(self, path: str, body: dict[str, Any], token: str | None = None,
             binding: str | None = None) -> tuple[int, Any]:
        headers = {"Content-Type": "application/json",
                   "Authorization": f"Bearer {token or self.token}"}
        if binding:
            headers["X-Amux-Binding"] = binding
        reused = self.connection.sock is not None
        try:
            self.connection.request("POST", path, json.dumps(body), headers)
            response = self.connection.getresponse()
        except (BrokenPipeError, ConnectionResetError, http.client.RemoteDisconnected):
            if not reused:
                raise
            # The Hub closes a connection idle for 30 s (a test that ran agents meanwhile):
            # send again on a new one, as the amux client does.
            self.connection.close()
            self.connection.request("POST", path, json.dumps(body), headers)
            response = self.connection.getresponse()
        return response.status, json.loads(response.read())

    def close(self) -> None:
        self.connection.close()


class HubProcess(Caller):
    """`python -m amux.hub.server HOME`, ready once it printed its status line."""

    def __init__(self, home: Path, wrapper: tuple[str, ...] = ()) -> None:
        """`wrapper` goes in front of the command (e.g. `prlimit --nofile=…`)."""
        self.home = home
        self.process = subprocess.Popen(
            [*wrapper, sys.executable, "-m", "amux.hub.server", str(home)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:  # it failed to start: collect it (no process or pipe left behind)
            _, err = self.process.communicate(timeout=20)
            raise AssertionError(err or "the Hub printed nothing")
        self.status = json.loads(line)
        self.socket_path = self.status["address"].removeprefix("unix:")
        owner = json.loads((home / "credentials" / "owner.json").read_text())
        self.owner_token = owner["token"]
        super().__init__(self.socket_path, self.owner_token)

    def stop(self) -> int:
        """SIGTERM (if still running), then collect the exit code and close the pipes."""
        self.close()
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        self.process.communicate(timeout=20)
        return self.process.returncode


def amux(home: Path, *args: str, stdin: str | None = None,
         env: dict[str, str] | None = None) -> tuple[int, Any, str]:
    """Run `python -m amux ARGS` with AMUX_HOME=home; returns (exit, stdout JSON, stderr)."""
    environment = {key: value for key, value in os.environ.items()
                   if key not in ("AMUX_MEMORY_CONFIG", "AMUX_HUB", "AMUX_TOKEN")}
    environment.update({"AMUX_HOME": str(home), **(env or {})})
    done = subprocess.run([sys.executable, "-m", "amux", *args], input=stdin,
                          capture_output=True, text=True, env=environment, timeout=60)
    try:
        out = json.loads(done.stdout)
    except ValueError:
        out = done.stdout
    return done.returncode, out, done.stderr


def amux_in(hub: HubProcess, env: dict[str, str], cwd: Path, *args: str,
            ) -> subprocess.Popen[str]:
    """Start `python -m amux ARGS` in `cwd` (made if missing) with exactly `env` plus the
    Hub's AMUX_HOME, as an agent end-to-end test drives it; stdin closed, output piped."""
    cwd.mkdir(parents=True, exist_ok=True)
    return subprocess.Popen([sys.executable, "-m", "amux", *args],
                            env={**env, "AMUX_HOME": str(hub.home)}, cwd=cwd,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
