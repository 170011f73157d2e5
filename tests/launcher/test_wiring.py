"""Wiring: every launch's agent gets its own delegated token, and nothing of the launcher's.

The launcher mints the agent's token from its own login token (`POST /v1/delegate`),
whoever it is and however it reaches the Hub: the owner's local default, a non-owner
over the TLS listener by `AMUX_HUB` + `AMUX_TOKEN` or `AMUX_MEMORY_CONFIG`. A small
agent script named `pi` (the CLI channel: it gets the config in its environment)
records its environment and its config and tries that token, and the test checks
the token after the agent exited.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from amux.client.connection import Connection, owner_config_path, read_config
from amux.client.transport import HubClient
from amux.errors import AmuxError
from amux.launcher import rundirs, wiring
from amux.memory.scope import Identity, resolve_scope
from tests.agentlog import KEEPS_SESSION
from tests.hub.tlscert import self_signed
from tests.hubproc import HubProcess

AGENT = '''#!{python}
import json, os, sys
if sys.argv[1:] == ["--version"]:
    print("fake-agent 1.0")
    sys.exit(0)
from amux.client.connection import read_config
from amux.client.transport import HubClient
from amux.errors import AmuxError
from amux.errors import AmuxError
record = {{"env": dict(os.environ), "calls": {{}}}}
path = os.environ.get("AMUX_MEMORY_CONFIG")
if path and os.path.exists(path):
    with open(path) as config:
        record["config"] = json.load(config)
    record["config_mode"] = os.stat(path).st_mode & 0o777
    for name, route, body in (("binding", "/v1/binding", {{}}), ("delegate", "/v1/delegate", {{}}),
                              ("admin", "/v1/admin/principals", {{"action": "list"}})):
        try:
            with HubClient(read_config(path, "agent", None), timeout=10) as hub:
                record["calls"][name] = hub.call(route, body)
        except AmuxError as error:
            record["calls"][name] = {{"error": error.code}}
{keeps_session}
with open(os.environ["FAKE_AGENT_LOG"], "a") as log:
    log.write(json.dumps(record) + "\\n")
'''


@dataclass
class Launch:
    """`python -m amux run pi` from a launcher home, with the agent script on PATH."""

    home: Path
    tmp_path: Path

    def __post_init__(self) -> None:
        self.bin = self.tmp_path / "agents"
        self.bin.mkdir(exist_ok=True)
        self.log = self.tmp_path / "agent.log"
        script = self.bin / "pi"
        script.write_text(AGENT.format(python=sys.executable, keeps_session=KEEPS_SESSION))
        script.chmod(0o755)

    def run(self, *args: str, env: dict[str, str]) -> tuple[subprocess.CompletedProcess[str],
                                                             dict[str, Any]]:
        environment = {k: v for k, v in os.environ.items()
                       if k not in ("AMUX_MEMORY_CONFIG", "AMUX_HUB", "AMUX_TOKEN",
                                     "AMUX_MEMORY_BINDING")}
        environment.update({"AMUX_HOME": str(self.home), "FAKE_AGENT_LOG": str(self.log),
                            "PATH": f"{self.bin}{os.pathsep}{environment['PATH']}", **env})
        done = subprocess.run([sys.executable, "-m", "amux", "run", *args], env=environment,
                              capture_output=True, text=True, timeout=120,
                              stdin=subprocess.DEVNULL)
        assert done.returncode == 0, done.stderr
        return done, json.loads(self.log.read_text().splitlines()[-1])

    def session(self) -> str:
        [session] = sorted((self.home / "sessions").iterdir())
        return session.name

    def run_dirs(self) -> list[Path]:
        root = rundirs.plain_root(self.home)
        return sorted(root.iterdir()) if root.is_dir() else []


@dataclass
class TlsHub:
    hub: HubProcess
    address: str
    cert: Path
    alice: str
    """alice's login token."""

    def call(self, token: str, path: str, body: dict[str, Any]) -> Any:
        with HubClient(Connection(self.address, token, None, str(self.cert), "test"),
                       timeout=10) as client:
            return client.call(path, body)

    def code(self, token: str, path: str, body: dict[str, Any]) -> str:
        with pytest.raises(AmuxError) as refused:
            self.call(token, path, body)
        return refused.value.code


@pytest.fixture
def tls_hub(short_home: Path, tmp_path: Path) -> Iterator[TlsHub]:
    """A Hub with memory and isolation on, a TLS listener and a principal alice."""
    cert, key = self_signed(tmp_path)
    first = HubProcess(short_home)
    for name, value in (("listeners.tls_address", "127.0.0.1:0"),
                        ("listeners.tls_cert", str(cert)), ("listeners.tls_key", str(key)),
                        ("memory.enabled", "true"), ("isolation.enabled", "true")):
        assert first.call("/v1/admin/config", {"action": "set", "key": name,
                                               "value": value})[0] == 200
    alice = first.call("/v1/admin/principals", {"action": "add", "name": "alice"})[1]["token"]
    assert first.stop() == 0
    hub = HubProcess(short_home)
    address = next(e["address"] for e in hub.status["listeners"] if e["kind"] == "tls")
    yield TlsHub(hub, address, cert, alice)
    hub.stop()


def remote_env(tls: TlsHub, how: str, tmp_path: Path) -> dict[str, str]:
    """alice's connection to the TLS listener, by `AMUX_HUB` or by `AMUX_MEMORY_CONFIG`."""
    if how == "AMUX_HUB":  # the standard-library client trusts SSL_CERT_FILE's CA
        return {"AMUX_HUB": tls.address, "AMUX_TOKEN": tls.alice,
                "SSL_CERT_FILE": str(tls.cert)}
    config = tmp_path / "alice.json"
    config.write_text(json.dumps({"version": 1, "hub": tls.address, "token": tls.alice,
                                  "ca_file": str(tls.cert)}))
    config.chmod(0o600)
    return {"AMUX_MEMORY_CONFIG": str(config)}


def assert_agent_had_its_own_token(record: dict[str, Any], launch: Launch, login: str,
                                   binding: str) -> str:
    """The agent's environment holds none of the launcher's connection, its config a
    delegated token bound to `binding` that can neither delegate nor administer."""
    env = record["env"]
    assert "AMUX_TOKEN" not in env and "AMUX_HUB" not in env
    assert "AMUX_MEMORY_BINDING" not in env
    assert login not in json.dumps(env)  # nowhere in the environment
    assert env["AMUX_MEMORY_CONFIG"].startswith(str(rundirs.plain_root(launch.home)))
    config = record["config"]
    assert record["config_mode"] == 0o600
    assert config["token"] != login and config["binding"] == binding
    calls = record["calls"]
    assert calls["binding"]["binding"] == binding
    assert calls["delegate"] == {"error": "forbidden"}  # it cannot mint further tokens
    assert calls["admin"] == {"error": "forbidden"}
    return str(config["token"])


@pytest.mark.parametrize("how", ["AMUX_HUB", "AMUX_MEMORY_CONFIG"])
def test_a_non_owner_launch_over_tls_gives_the_agent_its_own_token(
        tls_hub: TlsHub, tmp_path: Path, how: str) -> None:
    launch = Launch(tmp_path / "remote-home", tmp_path)  # a Runtime with no Hub of its own
    alice_binding = resolve_scope(Identity("alice"), isolation=True).binding
    done, record = launch.run("pi", "--", "-p", "hi", env=remote_env(tls_hub, how, tmp_path))
    assert "warning" not in done.stderr, done.stderr
    assert record["config"]["hub"] == tls_hub.address
    token = assert_agent_had_its_own_token(record, launch, tls_hub.alice, alice_binding)
    assert tls_hub.code(token, "/v1/binding", {}) == "unauthenticated"  # revoked at exit
    assert tls_hub.call(tls_hub.alice, "/v1/binding", {})["binding"] == alice_binding
    assert launch.run_dirs() == []
    principals = tls_hub.hub.call("/v1/admin/principals", {"action": "list"})[1]["principals"]
    alice = next(p for p in principals if p["principal"] == "alice")
    assert [t["kind"] for t in alice["tokens"]] == ["login"]  # nothing left behind


def test_a_resume_gets_a_fresh_token_or_none_when_the_binding_changed(
        tls_hub: TlsHub, tmp_path: Path) -> None:
    launch = Launch(tmp_path / "remote-home", tmp_path)
    env = remote_env(tls_hub, "AMUX_HUB", tmp_path)
    alice_binding = resolve_scope(Identity("alice"), isolation=True).binding
    _, first = launch.run("pi", "--", "-p", "one", env=env)
    done, second = launch.run("--resume", launch.session(), "--", "-p", "two", env=env)
    assert "warning" not in done.stderr, done.stderr
    token = assert_agent_had_its_own_token(second, launch, tls_hub.alice, alice_binding)
    assert token != first["config"]["token"]  # a fresh one, for the same frozen binding
    assert tls_hub.code(token, "/v1/binding", {}) == "unauthenticated"
    tls_hub.hub.call("/v1/admin/config", {"action": "set", "key": "isolation.enabled",
                                          "value": "false"})
    done, third = launch.run("--resume", launch.session(), "--", "-p", "three", env=env)
    assert "warning" in done.stderr and "binding_mismatch" in done.stderr
    assert "config" not in third  # a session without memory, never alice's own token
    assert "AMUX_TOKEN" not in third["env"] and launch.run_dirs() == []


@pytest.mark.parametrize("how", ["local default", "AMUX_MEMORY_CONFIG", "AMUX_HUB"])
def test_an_owner_launch_gives_the_agent_its_own_token(memory_hub: HubProcess,
                                                      tmp_path: Path, how: str) -> None:
    launch = Launch(memory_hub.home, tmp_path)
    owner = memory_hub.owner_token
    env = {"local default": {},
           "AMUX_MEMORY_CONFIG": {"AMUX_MEMORY_CONFIG": owner_config_path(memory_hub.home)},
           "AMUX_HUB": {"AMUX_HUB": f"unix:{memory_hub.socket_path}", "AMUX_TOKEN": owner},
           }[how]
    done, record = launch.run("pi", "--", "-p", "hi", env=env)
    assert "warning" not in done.stderr, done.stderr
    token = assert_agent_had_its_own_token(record, launch, owner, "global")
    status, body = memory_hub.call("/v1/binding", {}, token=token)
    assert (status, body["error"]["code"]) == (401, "unauthenticated")  # revoked at exit
    assert memory_hub.call("/v1/binding", {})[0] == 200  # the owner's login token works on
    assert launch.run_dirs() == []


def test_stale_self_delegated_tokens_are_revoked_by_their_own_principal(
        memory_hub: HubProcess, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AMUX_RUNS_DIR", str(tmp_path / "runs"))
    owner = read_config(owner_config_path(memory_hub.home), "test", None)
    alice = memory_hub.call("/v1/admin/principals", {"action": "add", "name": "alice"})[1]
    mine = memory_hub.call("/v1/delegate", {})[1]
    hers = memory_hub.call("/v1/delegate", {}, token=alice["token"])[1]
    directories = {}
    for name, issued, expires in (("mine", mine, mine["expires_at"]),
                                  ("hers", hers, hers["expires_at"]),
                                  ("expired", hers, time.time() - 1)):
        directory = rundirs.plain_root(memory_hub.home) / name
        directory.mkdir(parents=True)
        (directory / rundirs.TOKEN_NAME).write_bytes(rundirs.claim(rundirs.Token(
            issued["principal"], "global", issued["token"], issued["token_id"], own=True,
            expires_at=expires, hub=owner.hub, hub_uid=owner.hub_uid))[rundirs.TOKEN_NAME])
        (directory / "launcher.pid").write_text("999999999\n")  # its launcher is gone
        directories[name] = directory
    wiring.clean_stale_runs(memory_hub.home, owner, mine["principal"])
    assert memory_hub.call("/v1/binding", {}, token=mine["token"])[0] == 401
    assert not directories["mine"].exists() and not directories["expired"].exists()
    assert directories["hers"].exists()  # only alice can revoke it: kept for her launch
    assert memory_hub.call("/v1/binding", {}, token=hers["token"])[0] == 200
    alice_connection = Connection(f"unix:{memory_hub.socket_path}", alice["token"], None, None,
                                  "test", owner.hub_uid)
    wiring.clean_stale_runs(memory_hub.home, alice_connection, "alice")
    assert not directories["hers"].exists()
    assert memory_hub.call("/v1/binding", {}, token=hers["token"])[0] == 401


def test_a_missing_installed_client_is_an_explicit_failure(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from amux.launcher.wiring import installed_client

    monkeypatch.setattr(sys, "executable", str(tmp_path / "bin" / "python3"))
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(AmuxError, match="the amux client is not installed"):
        installed_client()
