"""The real OpenCode 1.18.33 through the real `python -m amux run opencode -- run …`, against
the scripted model, on a real Hub.

Only the model is scripted (tests/mockmodel); OpenCode, the launcher, `amux memory mcp` and
the Hub are real. The user has a config of their own: the mock provider and an instruction
file in their own `OPENCODE_CONFIG_CONTENT` (which amux must merge into, not replace), a
global `opencode.json` with an MCP server of theirs and `permission: {"*": "ask"}` (an ask
is rejected in `opencode run`), and a project `AGENTS.md`. The offline settings of
`opencode_env` are the sandbox's (no internet here), not amux's. OpenCode's title request
(no tools) is a side request (`opencode_is_side`).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from amux.client.tools import TOOLS
from tests.e2e.story import (
    PROJECT_RULE,
    USER_RULE,
    amux_run,
    chat_tools,
    check_opencode_family_story,
    opencode_family_user,
    opencode_is_side,
    opencode_system_text,
    sessions,
)
from tests.hubproc import HubProcess
from tests.isolation.world import World, user_a
from tests.mockmodel import MockModel, Text, ToolCall
from tests.mockmodel.agents import opencode_env, opencode_provider
from tests.peers import npm_bin

PATH = "preferences/editor.md"
FACT = "Indent with tabs.\n"
UPSERT = ToolCall("amux_memory_upsert", {"path": PATH, "content": FACT,
                                         "expected_revision": "absent"})
SEARCH = ToolCall("amux_memory_search", {"query": "tabs"})
AMUX_TOOLS = [f"amux_{tool['name']}" for tool in TOOLS]


def user_setup(root: Path, model: MockModel) -> tuple[dict[str, str], Path]:
    """The user's environment and project (module doc); nothing of amux in either."""
    return opencode_family_user(root, model, "opencode", "https://opencode.ai/config.json",
                                opencode_env)


def test_opencode_saves_recalls_and_resumes_through_amux(memory_hub: HubProcess,
                                                         tmp_path: Path) -> None:
    """(1) the protocol follows the user's AGENTS.md and their own config's instruction
    file, and the five tools come with their schemas beside the user's server; (2) a fact
    saved in one session lands in the Hub and a new session finds it, under the user's
    `"*": "ask"`; (3) resuming the first amux session continues the same OpenCode session
    with a byte-identical system message."""
    opencode = str(npm_bin("opencode"))
    with MockModel([UPSERT, Text("Saved.")], [SEARCH, Text("You indent with tabs.")],
                   [Text("Resumed.")], is_side=opencode_is_side) as model:
        env, work = user_setup(tmp_path, model)
        amux_run(memory_hub, env, work, opencode, "--", "run", "Remember: I indent with tabs.")
        amux_run(memory_hub, env, work, opencode, "--", "run", "How do I indent?")
        first, second = sessions(memory_hub.home)
        resumed = amux_run(memory_hub, env, work, "--resume", first["id"], "--", "run",
                           "--format", "json", "Still there?")
    main = model.main()
    # (1) OpenCode's own prompt, the user's, the protocol file; (2) saved despite the
    # user's ask rule, found by the next session; (3) each session's OpenCode id learnt
    # from the plugin's file, the resume continuing the first.
    again = check_opencode_family_story(
        memory_hub, model, main, first, second, resumed, greeting="You are opencode",
        instructions="opencode-instructions.md", rules=(PROJECT_RULE, USER_RULE), saved=FACT)
    # (OpenCode itself quotes a prompt argument that holds a space)
    assert again.body["messages"][-1] == {"role": "user", "content": '"Still there?"'}
    # The user's own config files were not touched (OpenCode's .gitignore aside).
    config = tmp_path / "home" / ".config" / "opencode"
    assert sorted(p.name for p in config.iterdir()) in (
        ["opencode.json"], [".gitignore", "opencode.json"])


def test_opencode_without_memory_and_with_the_hub_down(hub: HubProcess,
                                                       tmp_path: Path) -> None:
    """(4) memory off on the Hub: no tools, no protocol, OpenCode still answers; (5) the Hub
    unreachable: the same, with a warning naming why."""
    opencode = str(npm_bin("opencode"))
    with MockModel([Text("Off.")], [Text("Down.")], is_side=opencode_is_side) as model:
        env, work = user_setup(tmp_path, model)
        off = amux_run(hub, env, work, opencode, "--", "run", "Hi.")  # memory.enabled false
        down = amux_run(hub, {**env, "AMUX_HUB": f"unix:{tmp_path}/no-hub.sock",
                              "AMUX_TOKEN": "amux_" + "d" * 43}, work, opencode, "--",
                        "run", "Hi again.")
    assert "memory.enabled = false" in off.stderr
    assert "hub_unreachable" in down.stderr
    assert off.stdout.strip() == "Off." and down.stdout.strip() == "Down."
    for request in model.main():
        assert not set(AMUX_TOOLS) & set(chat_tools(request))
        assert "amux memory protocol" not in opencode_system_text(request)
        assert USER_RULE in opencode_system_text(request)  # the user's own config still applies
    # Without memory the session is still learnt (the plugin), so it can be resumed.
    assert all(state["agent_session"] for state in sessions(hub.home))


def test_opencode_reaches_an_endpoint_with_a_key_it_reads_itself(memory_hub: HubProcess,
                                                                 tmp_path: Path) -> None:
    """`--endpoint` on a home with no provider: OpenCode substitutes `{env:VAR}` from its
    own environment, so the key reaches the server but no argv, plan or state holds it."""
    secret = "sk-endpoint-" + "7" * 20
    with MockModel([Text("From the endpoint.")], is_side=opencode_is_side) as model:
        env = opencode_env(tmp_path, model)
        del env["OPENCODE_CONFIG_CONTENT"]  # no provider of the user's: the endpoint's only
        env["MY_ENDPOINT_KEY"] = secret
        done = amux_run(memory_hub, env, tmp_path / "work", "--endpoint", model.base_url,
                        "--model", "served-model", "--endpoint-key-env", "MY_ENDPOINT_KEY",
                        str(npm_bin("opencode")), "--", "run", "Hi.")
    assert done.stdout.strip() == "From the endpoint."
    [request] = model.main()
    assert request.headers["authorization"] == f"Bearer {secret}"
    assert request.body["model"] == "served-model"
    [state] = sessions(memory_hub.home)
    assert state["agent_session"] and secret not in json.dumps(state)
    assert all(r.headers.get("authorization") == f"Bearer {secret}" for r in model.side())


def test_opencode_runs_isolated_as_another_user(world: World) -> None:
    """(7) `amux run --as-user`: OpenCode as the target, with the target's own config (the
    launcher's is never passed on); its session id is learnt and its memory call lands in
    the Hub under the target's principal. The pinned install under the repository is
    world-readable and -executable, so the target runs it in place."""
    opencode = npm_bin("opencode")
    assert os.stat(opencode.resolve()).st_mode & 0o005 == 0o005
    a = user_a(world)
    entry = world.users[a]
    upsert = ToolCall("amux_memory_upsert", {"path": "notes/opencode.md",
                                             "content": "from opencode\n",
                                             "expected_revision": "absent"})
    with MockModel([upsert, Text("Saved.")], is_side=opencode_is_side) as model:
        config = Path(entry.pw_dir) / ".config" / "opencode"  # provisioned for A explicitly
        config.mkdir(parents=True)
        (config / "opencode.json").write_text(json.dumps(
            {"$schema": "https://opencode.ai/config.json", **opencode_provider(model)}))
        for path in (config.parent, config, config / "opencode.json"):
            os.chown(path, entry.pw_uid, entry.pw_gid)
        done = world.launch(a, str(opencode), "run", "Remember.", env={
            "OPENCODE_DISABLE_MODELS_FETCH": "1", "OPENCODE_DISABLE_AUTOUPDATE": "1",
            "npm_config_offline": "true",
            "OPENCODE_CONFIG_CONTENT": '{"model": "launcher/its-own"}'})  # never A's
        assert done.returncode == 0, done.stdout + done.stderr
    [result] = model.tool_results("amux_memory_upsert")
    assert not result.is_error, result.text
    assert (world.scope_dir(a) / "notes" / "opencode.md").read_text() == "from opencode\n"
    [state] = sessions(world.hub.home)
    assert state["as_user"] == a and state["agent_session"].startswith("ses_")
    assert model.main()[0].headers["x-session-id"] == state["agent_session"]
    assert "amux memory protocol" in opencode_system_text(model.main()[0])
