"""Isolated runs as other Unix users: real users, a real Hub with isolation on, real DAC.

Needs root (CI runs as root): the tests create two throwaway users A and B, a Hub
with `isolation.enabled` and a shared socket, and launch agents with `amux run
--as-user`. Scripted agents named `pi` (the CLI channel) and `claude` (the MCP
channel) record what they were given and use memory through the copied client;
the real Pi CLI runs as A against a scripted loopback model.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from amux.protocol.render import version
from tests.agentlog import check_writes, listed, tree, wait_for_pid
from tests.isolation.world import World, user_a, user_b
from tests.mockmodel import MockModel, Text, ToolCall
from tests.peers import npm_bin, with_node22

PROTOCOL = f"amux memory protocol v{version()}"
"""How the protocol the launcher gives agents opens (its version changes)."""


def test_an_isolated_agent_uses_memory_through_its_copy(world: World) -> None:
    a = user_a(world)
    entry = world.users[a]
    done = world.launch(a, str(world.agents / "pi"), env={"ISO_ACTION": "upsert"})
    assert done.returncode == 0, done.stderr
    [record] = world.records()
    assert (record["uid"], record["gid"]) == (entry.pw_uid, entry.pw_gid)
    assert 0 not in record["groups"]  # none of root's groups
    assert record["which"].startswith(str(world.runs))
    assert record["which"].endswith("/agent-config/memory/bin/amux")
    assert record["upsert"]["code"] == 0, record["upsert"]
    assert "notes/a.md" in record["search"]["out"]
    # The binding is A's; declaring global instead is refused (nothing falls back to global).
    assert json.loads(record["global"])["error"]["code"] == "binding_mismatch"
    assert (world.scope_dir(a) / "notes" / "a.md").read_text() == "isolated note\n"
    assert not (world.hub.home / "memory" / "global" / "notes").exists()

    done = world.launch(a, str(world.agents / "claude"), "-p", "x", env={"ISO_ACTION": "mcp"})
    assert done.returncode == 0, done.stderr
    answer = world.records()[1]["mcp"][-1]["result"]
    assert answer["isError"] is False, answer
    assert (world.scope_dir(a) / "notes" / "mcp.md").read_text() == "via mcp\n"


def test_the_store_is_unreadable_to_the_users_themselves(world: World) -> None:
    a, b = user_a(world), user_b(world)
    assert world.launch(a, str(world.agents / "pi"), env={"ISO_ACTION": "upsert"}
                        ).returncode == 0
    document = world.scope_dir(a) / "notes" / "a.md"
    root = world.hub.home / "memory"
    assert stat.S_IMODE(root.stat().st_mode) == 0o700
    assert stat.S_IMODE(world.scope_dir(a).stat().st_mode) == 0o700
    assert stat.S_IMODE(document.stat().st_mode) == 0o600
    assert document.stat().st_uid == os.geteuid()  # the Hub's user
    for user in (a, b):
        assert world.as_user(user, "cat", str(document)).returncode != 0
        assert world.as_user(user, "ls", str(root)).returncode != 0


def test_other_users_cannot_reach_a_runs_config_or_client(world: World) -> None:
    a, b = user_a(world), user_b(world)
    running = world.launch(a, str(world.agents / "pi"), env={"ISO_ACTION": "wait"},
                           wait=False)
    assert isinstance(running, subprocess.Popen)
    try:
        wait_for_pid(world.log)
        [run_dir] = list(world.runs.iterdir())
        memory = run_dir / "agent-config" / "memory"
        config = memory / "memory.json"
        assert stat.S_IMODE(memory.stat().st_mode) == 0o700
        assert stat.S_IMODE(config.stat().st_mode) == 0o600
        assert memory.stat().st_uid == world.users[a].pw_uid
        assert world.as_user(a, "cat", str(config)).returncode == 0  # A's own
        assert world.as_user(b, "cat", str(config)).returncode != 0
        assert world.as_user(b, "cat", str(memory / "bin" / "amux")).returncode != 0
        assert world.as_user(b, "ls", str(world.runs)).returncode != 0  # not listable
        # A's credential cannot reach B's scope (or global) through the Hub either.
        token = json.loads(config.read_text())["token"]
        for binding in ("global", f"principal:{hashlib.sha256(b.encode()).hexdigest()}"):
            status, body = world.hub.call("/v1/memory/search", {"query": "x"}, token,
                                          binding=binding)
            assert (status, body["error"]["code"]) == (403, "binding_mismatch")
    finally:
        running.send_signal(signal.SIGTERM)
        running.communicate(timeout=60)


def test_the_copy_works_when_the_installation_is_unreadable(world: World) -> None:
    a = user_a(world)
    prefix = Path(sys.prefix)
    venv = sys.prefix != sys.base_prefix
    mode = stat.S_IMODE(prefix.stat().st_mode)
    if venv:
        prefix.chmod(0o700)
    try:
        assert world.as_user(a, "ls", str(prefix)).returncode != 0
        assert world.as_user(a, "ls", str(world.agents / "pi")).returncode == 0  # the agent
        done = world.launch(a, str(world.agents / "pi"), env={"ISO_ACTION": "upsert"})
        assert done.returncode == 0, done.stderr
        assert world.records()[0]["upsert"]["code"] == 0
    finally:
        prefix.chmod(mode)


@pytest.mark.parametrize("ending", ["exit", "crash", "SIGKILL"])
def test_nothing_remains_after_the_agent_ends(world: World, ending: str) -> None:
    a = user_a(world)
    tokens = len(world.live_tokens())
    env = {"ISO_ACTION": "wait" if ending == "SIGKILL" else "",
           "ISO_EXIT": "70" if ending == "crash" else "0"}
    running = world.launch(a, str(world.agents / "pi"), env=env, wait=False)
    assert isinstance(running, subprocess.Popen)
    if ending == "SIGKILL":
        os.kill(wait_for_pid(world.log), signal.SIGKILL)
    running.communicate(timeout=60)
    assert running.returncode == {"exit": 0, "crash": 70, "SIGKILL": 137}[ending]
    assert list(world.runs.iterdir()) == []
    assert len(world.live_tokens()) == tokens


def test_a_dry_run_lists_exactly_what_an_isolated_launch_then_creates(world: World) -> None:
    """As for the launching user's launch (tests/launcher/test_run.py), both ways, with
    what only an isolated run has: root's runs root, the target's connection and copy of
    the client, the agent's directory in the target's home, and Gemini's mirrors and
    files there, each owned by whom the dry run says, as the agent runs."""
    a = user_a(world)
    uid = world.users[a].pw_uid
    roots = (world.hub.home, world.runs.parent, Path(world.users[a].pw_dir))
    before = tree(listed(*roots), world.hub.home)
    plan = world.run(a, str(world.agents / "gemini"), "-p", "x", options=("--dry-run",))
    assert plan.returncode == 0, plan.stderr
    dry = json.loads(plan.stdout)
    assert tree(listed(*roots), world.hub.home) == before  # a dry run writes nothing
    running = world.launch(a, str(world.agents / "gemini"), "-p", "x",
                           env={"ISO_ACTION": "wait"}, wait=False)
    assert isinstance(running, subprocess.Popen)
    try:
        wait_for_pid(world.log)
        during = tree(listed(*roots), world.hub.home)
    finally:
        running.send_signal(signal.SIGTERM)
        running.communicate(timeout=60)
    [session] = [Path(path).name for path in during if Path(path).parent == world.runs]
    check_writes(dry, session, before, during, {"launcher": os.geteuid(), a: uid})
    assert any(entry["kind"] == "copy" and entry["owner"] == a for entry in dry["writes"])


def test_the_service_environment_never_reaches_the_agent(world: World) -> None:
    a = user_a(world)
    home = world.users[a].pw_dir
    inherited = {"CODEX_HOME": "/root/.codex", "PI_CODING_AGENT_DIR": "/root/.pi/agent",
                 "CLAUDE_CONFIG_DIR": "/root/.claude", "AMUX_TOKEN": "amux_" + "s" * 43,
                 "ANTHROPIC_API_KEY": "sk-service-secret", "OPENAI_API_KEY": "sk-other",
                 "PATH": f"/usr/bin:/bin:/usr/bin:{os.environ['PATH']}"}
    plan = world.launch(a, str(world.agents / "pi"), env=inherited,
                        options=("--dry-run", "--pass-env", "OPENAI_API_KEY"))
    assert plan.returncode == 0, plan.stderr
    changes = json.loads(plan.stdout)["env"]
    assert changes["CODEX_HOME"] == f"{home}/.codex"
    assert changes["PI_CODING_AGENT_DIR"] == f"{home}/.pi/agent"
    assert changes["CLAUDE_CONFIG_DIR"] is None and changes["AMUX_TOKEN"] is None
    assert changes["ANTHROPIC_API_KEY"] is None and "OPENAI_API_KEY" not in changes
    assert changes["HOME"] == home
    assert json.loads(plan.stdout)["as_user"]["user"] == a
    done = world.launch(a, str(world.agents / "pi"), env=inherited,
                        options=("--pass-env", "OPENAI_API_KEY"))
    assert done.returncode == 0, done.stderr
    seen = world.records()[0]["env"]
    assert seen["CODEX_HOME"] == f"{home}/.codex"
    assert seen["PI_CODING_AGENT_DIR"] == f"{home}/.pi/agent"
    assert "CLAUDE_CONFIG_DIR" not in seen and "ANTHROPIC_API_KEY" not in seen
    assert seen["OPENAI_API_KEY"] == "sk-other"  # passed explicitly
    assert not [k for k in seen if k.startswith("AMUX_") and k != "AMUX_MEMORY_CONFIG"]
    items = seen["PATH"].split(os.pathsep)
    assert len(items) == len(set(items))  # no duplicate PATH entries


def test_the_real_pi_runs_isolated_against_a_scripted_model(world: World) -> None:
    pi = npm_bin("pi")
    a = user_a(world)
    entry = world.users[a]
    upsert = ToolCall("mcp__amux__memory_upsert", {"path": "notes/pi.md", "content": "from pi\n",
                                                   "expected_revision": "absent"})
    with MockModel([upsert, Text("Saved.")]) as model:  # Pi 1.x: its MCP route
        agent_dir = Path(entry.pw_dir) / ".pi" / "agent"  # provisioned for A explicitly
        agent_dir.mkdir(parents=True)
        (agent_dir / "models.json").write_text(json.dumps({"providers": {"mock": {
            "baseUrl": model.base_url, "api": "openai-completions", "apiKey": "sk-dummy",
            "models": [{"id": "mock-model"}]}}}))
        for path in (agent_dir.parent, agent_dir, agent_dir / "models.json"):
            os.chown(path, entry.pw_uid, entry.pw_gid)
        done = world.launch(a, str(pi), "-p", "--model", "mock/mock-model", "Remember.",
                            env=with_node22({"PI_OFFLINE": "1", "PATH": os.environ["PATH"]}))
        assert done.returncode == 0, done.stdout + done.stderr
    [result] = model.tool_results("mcp__amux__memory_upsert")
    assert not result.is_error and "error" not in result.text.lower(), result.text
    assert (world.scope_dir(a) / "notes" / "pi.md").read_text() == "from pi\n"
    assert f"{PROTOCOL} (MCP)" in model.main()[0].instructions


def test_the_real_gemini_runs_isolated_through_its_mirror(world: World) -> None:
    """Gemini CLI as A, pointed at the scripted model with `--endpoint` (no key): its
    mirror is A's own home, the memory call lands in A's scope, and what Gemini keeps
    (its session) is in A's real `~/.gemini`, owned by A."""
    from tests.mockmodel import mcp

    gemini = npm_bin("gemini")
    a = user_a(world)
    entry = world.users[a]
    upsert = mcp("memory_upsert", {"path": "notes/gemini.md", "content": "from gemini\n",
                                   "expected_revision": "absent"})
    with MockModel([upsert, Text("Saved.")]) as model:
        done = world.launch(a, str(gemini), "-p", "Remember.", env={
            "GEMINI_CLI_TRUST_WORKSPACE": "true"}, options=(
            "--endpoint", model.url, "--endpoint-api", "gemini", "--model", "gemini-test"))
        assert done.returncode == 0, done.stdout + done.stderr
    [result] = model.tool_results("memory_upsert")
    assert not result.is_error, result.text
    assert (world.scope_dir(a) / "notes" / "gemini.md").read_text() == "from gemini\n"
    assert PROTOCOL in "\n".join(model.main()[0].instruction_parts)
    home = Path(entry.pw_dir)
    [chat] = (home / ".gemini" / "tmp").glob("*/chats/session-*.jsonl")
    assert chat.stat().st_uid == entry.pw_uid
    assert not list((home / ".amux" / "sessions").glob("*/gemini-home"))
