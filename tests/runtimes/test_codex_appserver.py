"""The Codex app-server driver against the real `codex app-server` (offline, no model turn).

Every real run gets its own CODEX_HOME (HOME is a temp dir already, see conftest). The
calls an older Codex lacks are exercised with a scripted stand-in, since the pinned
Codex has them all.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from amux.runtimes.codex_appserver import (
    MEMORY_OFF_OVERRIDES,
    CodexAppServer,
    CodexAppServerError,
    CodexRequestError,
)
from tests.peers import npm_bin

MEMORIES_ON = b"""\
# the user's own settings: amux must leave this file byte-for-byte as it is
model = "gpt-5"

[features]
memories = true

[memories]
use_memories = true
generate_memories = true
"""

ALL_OFF = {
    "features.memories": False,
    "memories.use_memories": False,
    "memories.generate_memories": False,
}


@pytest.fixture
def codex() -> Path:
    return npm_bin("codex")


@pytest.fixture
def codex_home(tmp_path: Path) -> Path:
    home = tmp_path / "codex-home"
    home.mkdir()
    return home


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    return work


def app_server(codex: Path, codex_home: Path, *overrides: str) -> CodexAppServer:
    env = {**os.environ, "CODEX_HOME": str(codex_home)}
    return CodexAppServer([str(codex), "app-server", *overrides], env=env, cwd=codex_home)


def live_in_group(pgid: int) -> list[int]:
    """Processes of a group that are still running (not zombies waiting for init)."""
    live = []
    for entry in Path("/proc").iterdir():
        try:
            state, _ppid, group = (entry / "stat").read_text().rsplit(")", 1)[1].split()[:3]
        except (OSError, ValueError):
            continue  # not a process, or it ended while being read
        if int(group) == pgid and state != "Z":
            live.append(int(entry.name))
    return live


def loaded_threads(server: CodexAppServer) -> list[str]:
    data: list[str] = server.request("thread/loaded/list", {})["data"]
    return data


# -- the memory-safe thread start, for real ---------------------------------------------


def test_memory_safe_start_with_the_users_memories_on(
    codex: Path, codex_home: Path, workspace: Path
) -> None:
    """The command-line overrides beat the user's config.toml, which stays untouched."""
    config = codex_home / "config.toml"
    config.write_bytes(MEMORIES_ON)
    with app_server(codex, codex_home, *MEMORY_OFF_OVERRIDES) as server:
        expected = subprocess.run([str(codex), "--version"], capture_output=True, text=True,
                                  timeout=30, check=True).stdout.split()[-1]
        assert server.version == expected

        assert server.memory_settings(workspace) == ALL_OFF
        thread_id = server.start_thread("Use the amux memory protocol.", workspace)

        assert loaded_threads(server) == [thread_id]
        started = server.wait_for_notification("thread/started")
        assert started["params"]["thread"]["id"] == thread_id
        # memoryMode/set is idempotent: repeating it shows its exact answer.
        assert server.request("thread/memoryMode/set",
                              {"threadId": thread_id, "mode": "disabled"}) == {}
        status = server.request("memory/status", {})
        assert set(status) >= {"v2ConsolidatedThreads", "v2Ready"}
        assert all("method" in message for message in server.take_notifications())
        assert server.take_notifications() == []
        pid = server.pid
    assert config.read_bytes() == MEMORIES_ON
    with pytest.raises(CodexAppServerError, match="was closed"):
        server.request("memory/status", {})
    assert live_in_group(pid) == []


def test_refuses_when_the_users_config_turns_memories_on(
    codex: Path, codex_home: Path, workspace: Path
) -> None:
    config = codex_home / "config.toml"
    config.write_bytes(MEMORIES_ON)
    with app_server(codex, codex_home) as server:
        with pytest.raises(CodexAppServerError) as refused:
            server.start_thread("protocol", workspace)
        assert loaded_threads(server) == []
    message = str(refused.value)
    assert "did not confirm that native memory is off" in message
    for key in ALL_OFF:
        assert f"{key} is true" in message
    assert "-c memories.use_memories=false" in message
    assert config.read_bytes() == MEMORIES_ON


def test_refuses_when_memories_are_merely_unset(
    codex: Path, codex_home: Path, workspace: Path
) -> None:
    """Codex's own default is not a confirmation: unset (null) settings are refused."""
    with app_server(codex, codex_home) as server:
        settings = server.memory_settings(workspace)
        with pytest.raises(CodexAppServerError) as refused:
            server.start_thread("protocol", workspace)
        assert loaded_threads(server) == []
    assert settings["memories.use_memories"] is None
    assert "memories.use_memories is null" in str(refused.value)
    assert "memories.generate_memories is null" in str(refused.value)
    assert not (codex_home / "config.toml").exists()


@pytest.mark.parametrize("overridden", [True, False])
def test_config_read_sees_the_trusted_projects_layer(
    codex: Path, codex_home: Path, workspace: Path, overridden: bool
) -> None:
    """A trusted project's .codex/config.toml counts only from the thread's cwd."""
    (workspace / ".codex").mkdir()
    (workspace / ".codex" / "config.toml").write_bytes(MEMORIES_ON)
    (codex_home / "config.toml").write_text(f'[projects."{workspace}"]\ntrust_level = "trusted"\n')
    overrides = MEMORY_OFF_OVERRIDES if overridden else ()
    with app_server(codex, codex_home, *overrides) as server:
        if overridden:
            assert server.memory_settings(workspace) == ALL_OFF
            assert server.start_thread("protocol", workspace)
            return
        assert server.memory_settings(codex_home)["memories.use_memories"] is None
        with pytest.raises(CodexAppServerError, match=r"memories\.use_memories is true"):
            server.start_thread("protocol", workspace)


def test_an_invalid_mode_is_a_clear_request_error(
    codex: Path, codex_home: Path, workspace: Path
) -> None:
    with app_server(codex, codex_home, *MEMORY_OFF_OVERRIDES) as server:
        thread_id = server.start_thread("protocol", workspace)
        with pytest.raises(CodexRequestError) as refused:
            server.request("thread/memoryMode/set", {"threadId": thread_id, "mode": "sometimes"})
    assert refused.value.code == -32600
    assert not refused.value.missing_method
    assert "refused thread/memoryMode/set (-32600)" in str(refused.value)
    assert "unknown variant `sometimes`" in str(refused.value)


def test_an_unreadable_user_config_stops_the_start(
    codex: Path, codex_home: Path, workspace: Path
) -> None:
    broken = b"model = [unclosed\n"
    (codex_home / "config.toml").write_bytes(broken)
    with app_server(codex, codex_home, *MEMORY_OFF_OVERRIDES) as server:
        with pytest.raises(CodexRequestError) as refused:
            server.start_thread("protocol", workspace)
        assert loaded_threads(server) == []
    assert refused.value.method == "config/read"
    assert "failed to read configuration layers" in str(refused.value)
    assert (codex_home / "config.toml").read_bytes() == broken


def test_an_app_server_that_exits_is_reported_with_its_stderr(
    codex: Path, codex_home: Path
) -> None:
    with pytest.raises(CodexAppServerError) as failed:
        app_server(codex, codex_home, "--strict-config", "-c", "memories.no_such_key=false")
    message = str(failed.value)
    assert "codex app-server exited with code 1 before it could answer initialize" in message
    assert "unknown configuration field `memories.no_such_key`" in message


def test_unknown_method_maps_to_missing_method(codex: Path, codex_home: Path) -> None:
    """How the real Codex reports a call it does not have, which the driver relies on."""
    with app_server(codex, codex_home) as server, pytest.raises(CodexRequestError) as refused:
        server.request("thread/noSuchCall", {})
    assert refused.value.code == -32600
    assert refused.value.missing_method


# -- what the real Codex cannot show: a silent server, and an older Codex ---------------


def test_a_silent_app_server_times_out_with_its_stderr() -> None:
    silent = "import sys, time; print('stand-in up', file=sys.stderr, flush=True); time.sleep(60)"
    began = time.monotonic()
    with pytest.raises(CodexAppServerError) as failed:
        CodexAppServer([sys.executable, "-c", silent], timeout=1)
    assert time.monotonic() - began < 15
    assert "did not answer initialize within 1 s" in str(failed.value)
    assert "last stderr lines:\nstand-in up" in str(failed.value)


# Stands in for `codex app-server` of an older Codex: it answers the protocol with
# canned results, except for the methods given in argv[1] (method -> error), and logs
# every message it receives to argv[2]. argv[3] may replace the config/read result.
STAND_IN = """\
import json, sys

errors, log = json.loads(sys.argv[1]), sys.argv[2]
results = {
    "initialize": {"userAgent": "amux/0.99.0 (stand-in for an older Codex)"},
    "config/read": json.loads(sys.argv[3]) if len(sys.argv) > 3 else {"config": {
        "features": {"memories": False},
        "memories": {"use_memories": False, "generate_memories": False}}},
    "thread/start": {"thread": {"id": "stand-in-thread"}},
    "thread/memoryMode/set": {},
}
for line in sys.stdin:
    message = json.loads(line)
    with open(log, "a") as out:
        out.write(line)
    if "id" in message:
        method = message["method"]
        answer = {"error": errors[method]} if method in errors else {"result": results[method]}
        print(json.dumps({"id": message["id"], **answer}), flush=True)
"""


def stand_in(tmp_path: Path, errors: dict[str, Any], *config: str) -> tuple[list[str], Path]:
    script, log = tmp_path / "older_codex.py", tmp_path / "received.jsonl"
    script.write_text(STAND_IN)
    return [sys.executable, str(script), json.dumps(errors), str(log), *config], log


def received(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()]


# An older Codex may say "unknown variant" as 0.171.0 does, or use the JSON-RPC code.
@pytest.mark.parametrize("style", ["variant", "jsonrpc"])
@pytest.mark.parametrize(
    ("missing", "need"),
    [
        ("config/read", "confirm that native memory is off"),
        ("thread/start", "start a thread with the memory protocol"),
        ("thread/memoryMode/set", "keep native memory off"),
    ],
)
def test_a_codex_lacking_a_call_names_it(
    tmp_path: Path, workspace: Path, missing: str, need: str, style: str
) -> None:
    error = {
        "variant": {"code": -32600, "message": f"Invalid request: unknown variant `{missing}`,"
                                               " expected one of `initialize`, `thread/start`"},
        "jsonrpc": {"code": -32601, "message": "Method not found"},
    }[style]
    argv, log = stand_in(tmp_path, {missing: error})
    with CodexAppServer(argv) as server, pytest.raises(CodexAppServerError) as failed:
        server.start_thread("protocol", workspace)
    assert str(failed.value) == (
        f"this Codex (version 0.99.0) lacks {missing}, which amux needs to {need};"
        " upgrade Codex"
    )
    methods = [message["method"] for message in received(log)]
    expected = ["initialize", "initialized", "config/read", "thread/start",
                "thread/memoryMode/set"]
    assert methods == expected[: expected.index(missing) + 1]


def test_the_sequence_sends_what_the_spec_asks(tmp_path: Path, workspace: Path) -> None:
    argv, log = stand_in(tmp_path, {})
    with CodexAppServer(argv) as server:
        assert server.start_thread("merged text", workspace, {"model": "m"}) == "stand-in-thread"
        with pytest.raises(ValueError, match="config"):
            server.start_thread("merged text", workspace, {"config": {}})
    initialize, initialized, config_read, thread_start, memory_mode = received(log)
    assert initialize["params"]["capabilities"] == {"experimentalApi": True}
    assert initialize["params"]["clientInfo"]["name"] == "amux"
    assert initialized == {"method": "initialized"}
    assert config_read["params"] == {"includeLayers": False, "cwd": str(workspace)}
    assert thread_start["params"] == {"model": "m", "developerInstructions": "merged text",
                                      "cwd": str(workspace)}
    assert memory_mode["params"] == {"threadId": "stand-in-thread", "mode": "disabled"}


def test_a_config_without_the_memory_settings_is_not_a_confirmation(
    tmp_path: Path, workspace: Path
) -> None:
    argv, log = stand_in(tmp_path, {}, json.dumps({"config": {"features": {}}}))
    with CodexAppServer(argv) as server, pytest.raises(CodexAppServerError) as failed:
        server.start_thread("protocol", workspace)
    assert "features.memories is null" in str(failed.value)
    assert "version 0.99.0" in str(failed.value)
    assert [message["method"] for message in received(log)][-1] == "config/read"
