"""The world isolated-run tests share: two throwaway Unix users A and B, a Hub with
isolation on and a shared socket, a runs root of root's, and scripted agents (named
like the real ones, so each adapter plans for them) that record what they were given.

The `world` fixture builds it and removes all of it, users included (tests/conftest.py
shares it with every test: the isolation tests and the e2e ones that run as a user).
"""

from __future__ import annotations

import hashlib
import json
import os
import pwd
import secrets
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.hostile import add_user, remove_user, require_root
from tests.hubproc import HubProcess

AGENT = '''#!/usr/bin/python3
import json, os, signal, subprocess, sys, time
if sys.argv[1:] == ["--version"]:
    print("scripted 1.0")
    sys.exit(0)
if "app-server" in sys.argv[1:]:  # Codex's config layers: not answered, so amux reads them
    sys.exit(1)
log = os.environ["ISO_LOG"]
record = {"uid": os.getuid(), "gid": os.getgid(), "groups": sorted(os.getgroups()),
          "argv": sys.argv[1:], "env": dict(os.environ), "pid": os.getpid()}
def run(*args, stdin=b""):
    done = subprocess.run(list(args), input=stdin, capture_output=True)
    return {"code": done.returncode, "out": done.stdout.decode(), "err": done.stderr.decode()}
action = os.environ.get("ISO_ACTION", "")
if "upsert" in action:
    record["which"] = run("which", "amux")["out"].strip()
    record["upsert"] = run("amux", "memory", "upsert", "notes/a.md", "--expected-revision",
                           "absent", stdin=b"isolated note\\n")
    record["search"] = run("amux", "memory", "search", "isolated")
    record["global"] = subprocess.run(["amux", "memory", "search", "isolated"],
                                      env={**os.environ, "AMUX_MEMORY_BINDING": "global"},
                                      capture_output=True, text=True).stdout
if "mcp" in action:
    config = json.loads(next(a for a in sys.argv if a.startswith("--mcp-config="))
                        .split("=", 1)[1])["mcpServers"]["amux"]
    server = subprocess.Popen([config["command"], *config["args"]], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, env={**os.environ, **config["env"]})
    lines = [{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                 "protocolVersion": "2025-06-18", "capabilities": {},
                 "clientInfo": {"name": "scripted", "version": "1"}}},
             {"jsonrpc": "2.0", "method": "notifications/initialized"},
             {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
                 "name": "memory_upsert", "arguments": {"path": "notes/mcp.md",
                 "content": "via mcp\\n", "expected_revision": "absent"}}}]
    out, _ = server.communicate("".join(json.dumps(l) + "\\n" for l in lines).encode(), 30)
    record["mcp"] = [json.loads(l) for l in out.decode().splitlines()]
if "peek" in action:
    record["peek"] = {path: run("cat", path) for path in os.environ["ISO_PEEK"].split(":")}
mirror = os.path.join(os.environ.get("GEMINI_CLI_HOME", "/nonexistent"), ".gemini")
if "mirror" in action:  # what Gemini would see of its home
    record["mirror"] = sorted(os.listdir(mirror))
    record["context"] = {name: open(os.path.join(mirror, name), errors="replace").read()
                         for name in os.listdir(mirror) if name.endswith(".md")}
if "fifo" in action:  # leave a FIFO where amux wrote the settings
    os.remove(os.path.join(mirror, "settings.json"))
    os.mkfifo(os.path.join(mirror, "settings.json"))
if "stop-helper" in action:  # stop the launcher's other children that run as us
    launcher, stopped = os.getppid(), []
    for pid in [int(p) for p in os.listdir("/proc") if p.isdigit()]:
        try:
            with open(f"/proc/{pid}/stat") as handle:
                parent = int(handle.read().rpartition(")")[2].split()[1])
            uid = os.stat(f"/proc/{pid}/environ").st_uid
        except (OSError, ValueError):
            continue
        if parent == launcher and pid != os.getpid():
            stopped.append({"pid": pid, "proc_uid": uid,
                            "environ": run("cat", f"/proc/{pid}/environ")["code"],
                            "signalled": run("kill", "-STOP", str(pid))["code"]})
    record["stopped"] = stopped
with open(log, "a") as handle:
    handle.write(json.dumps(record) + "\\n")
if "wait" in action:
    with open(log + ".pid", "w") as handle:
        handle.write(str(os.getpid()))
    time.sleep(60)
sys.exit(int(os.environ.get("ISO_EXIT", "0")))
'''
AGENTS = ("pi", "claude", "gemini", "codex")
"""The scripted agents, each named for the adapter that plans its launch."""


@dataclass
class World:
    hub: HubProcess
    users: dict[str, pwd.struct_passwd]
    runs: Path
    agents: Path
    shared: Path
    scratch: Path

    def scope_dir(self, user: str) -> Path:
        digest = hashlib.sha256(user.encode()).hexdigest()
        return self.hub.home / "memory" / "users" / digest

    def launch(self, user: str, agent: str, *args: str, env: dict[str, str] | None = None,
               options: tuple[str, ...] = (), wait: bool = True, timeout: float = 120,
               ) -> subprocess.CompletedProcess[str] | subprocess.Popen[str]:
        environment = {k: v for k, v in os.environ.items()
                       if k not in ("AMUX_MEMORY_CONFIG", "AMUX_HUB", "AMUX_TOKEN")}
        environment.update({"AMUX_HOME": str(self.hub.home), "AMUX_RUNS_DIR": str(self.runs),
                            "ISO_LOG": str(self.log), **(env or {})})
        argv = [sys.executable, "-m", "amux", "run", "--as-user", user, *options, agent,
                "--", *args]
        if not wait:
            return subprocess.Popen(argv, env=environment, stdin=subprocess.DEVNULL,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                    cwd=self.scratch)
        return subprocess.run(argv, env=environment, stdin=subprocess.DEVNULL, text=True,
                              capture_output=True, timeout=timeout, cwd=self.scratch)

    def run(self, user: str, agent: str, *args: str, **options: Any,
            ) -> subprocess.CompletedProcess[str]:
        """`launch` to its end (typed so)."""
        done = self.launch(user, agent, *args, **options)
        assert isinstance(done, subprocess.CompletedProcess)
        return done

    @property
    def log(self) -> Path:
        return self.scratch / "agent.log"

    def records(self) -> list[dict[str, Any]]:
        lines = self.log.read_text().splitlines() if self.log.exists() else []
        return [json.loads(line) for line in lines]

    def as_user(self, user: str, *argv: str) -> subprocess.CompletedProcess[str]:
        entry = self.users[user]
        return subprocess.run(list(argv), user=entry.pw_uid, group=entry.pw_gid,
                              extra_groups=[], capture_output=True, text=True, timeout=60,
                              cwd="/")

    def live_tokens(self) -> list[dict[str, Any]]:
        principals = self.hub.call("/v1/admin/principals", {"action": "list"})[1]["principals"]
        return [t for p in principals for t in p["tokens"] if t["kind"] != "login"]


def user_a(world: World) -> str:
    return sorted(world.users)[0]


def user_b(world: World) -> str:
    return sorted(world.users)[1]


@pytest.fixture
def world(short_home: Path) -> Iterator[World]:
    require_root("isolated runs (creating users and switching to them)")
    tag = secrets.token_hex(3)
    names = [f"amuxt-a-{tag}", f"amuxt-b-{tag}"]
    made: list[Path] = []
    hub: HubProcess | None = None
    try:  # everything below is undone in `finally`, however far it got
        scratch = Path(tempfile.mkdtemp(prefix="amux-iso-"))
        made.append(scratch)
        scratch.chmod(0o777)  # the agents (as A) write their records here
        shared = Path(tempfile.mkdtemp(prefix="amux-shared-")) / "hub.sock"
        made.append(shared.parent)
        shared.parent.chmod(0o755)
        runs = Path(tempfile.mkdtemp(prefix="amux-runs-")) / "runs"
        made.append(runs.parent)
        runs.parent.chmod(0o711)  # like /var/lib: traversable
        agents = scratch / "bin"
        agents.mkdir(mode=0o755)
        for name in AGENTS:
            (agents / name).write_text(AGENT)
            (agents / name).chmod(0o755)
        for name in names:
            add_user(name)
        hub = HubProcess(short_home)
        for key, value in (("memory.enabled", "true"), ("isolation.enabled", "true"),
                           ("listeners.shared_socket", str(shared))):
            hub.call("/v1/admin/config", {"action": "set", "key": key, "value": value})
        for name in names:
            hub.call("/v1/admin/principals", {"action": "add", "name": name})
        hub.stop()
        hub = HubProcess(short_home)  # the shared socket opens at start
        yield World(hub, {n: pwd.getpwnam(n) for n in names}, runs, agents, shared, scratch)
    finally:
        if hub is not None:
            hub.stop()
        for name in names:
            remove_user(name)
        for path in made:
            shutil.rmtree(path, ignore_errors=True)
