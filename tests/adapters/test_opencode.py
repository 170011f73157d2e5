"""The OpenCode adapter's plan and hooks (no OpenCode runs here; tests/e2e/test_opencode.py
runs the real one): one merged `OPENCODE_CONFIG_CONTENT`, refusals, resume placement, the
endpoint's provider, the session plugin and its pick, isolation."""

from __future__ import annotations

import json
from typing import Any

import pytest

from amux.adapters import ADAPTERS
from amux.adapters.base import (
    ENDPOINT_PROVIDER,
    NO_KEY,
    AgentRequest,
    EndpointRequest,
    FinishedRun,
    LaunchPlan,
    PlanRefused,
    ResumeFlagRefused,
    SessionFile,
)
from amux.adapters.opencode import (
    CONTENT,
    INSTRUCTIONS_FILE,
    PLUGIN_FILE,
    SESSION_FILE,
    TOOLS,
    merge,
    pick_session,
)
from amux.protocol.render import render
from tests.adapting import FakeProbe, memory

OPENCODE = ADAPTERS["opencode"]
FILES = "/home/u/.local/share/amux/sessions/s"
SES = "ses_dcdb994b7ffeG3HJXKGik6VRln"


def plan(*args: str, with_memory: bool = True, theirs: str | None = None,
         agent_session: str | None = None, resume: bool = False,
         endpoint: EndpointRequest | None = None, frozen: str | None = None) -> LaunchPlan:
    """A launch as the launcher asks for it (a new session has no reference yet)."""
    env = {"HOME": "/home/u", **({CONTENT: theirs} if theirs is not None else {})}
    return OPENCODE.plan(AgentRequest(
        executable="/usr/bin/opencode", args=args,
        memory=memory("mcp") if with_memory else None, frozen_instructions=frozen,
        agent_session=agent_session, resume=resume, files_dir=FILES, endpoint=endpoint,
        user_settings=OPENCODE.user_settings(args, FakeProbe({}, env=env))))


def content(launch: LaunchPlan) -> dict[str, Any]:
    return dict(json.loads(launch.env.set[CONTENT]))


def test_a_new_session_gets_the_protocol_file_the_server_the_tools_and_the_plugin() -> None:
    launch = plan("run", "hello")
    assert launch.argv == ("/usr/bin/opencode", "run", "hello")
    assert launch.channel == "mcp" and launch.instructions == render("mcp")
    assert launch.suppression == {} and launch.agent_session is None
    instructions, plugin = launch.files
    assert instructions.path == f"{FILES}/{INSTRUCTIONS_FILE}" and instructions.mode == 0o600
    assert instructions.text == render("mcp")
    assert content(launch) == {
        "instructions": [instructions.path],
        "mcp": {"amux": {"type": "local", "command": ["/opt/amux/bin/amux", "memory", "mcp"],
                         "environment": memory("mcp").env}},
        "permission": dict.fromkeys(TOOLS, "allow"),
        "plugin": [plugin.path]}
    assert TOOLS == ("amux_memory_search", "amux_memory_get", "amux_memory_upsert",
                     "amux_memory_forget", "amux_result_continue")
    # The plugin writes the first top-level session's id, once, to the watched file.
    assert plugin.path == f"{FILES}/{PLUGIN_FILE}"
    assert json.dumps(f"{FILES}/{SESSION_FILE}") in plugin.text
    assert '"session.created"' in plugin.text and "parentID" in plugin.text
    assert 'flag: "wx"' in plugin.text
    assert "AMUX_TOKEN" not in launch.env.set[CONTENT]


def test_the_users_own_config_content_is_merged_as_opencode_merges_layers() -> None:
    theirs = """{
      // the user's own launch config (JSONC)
      "model": "mine/m",
      "instructions": ["/u/rules.md"],
      "mcp": {"git": {"type": "local", "command": ["git-mcp"]}},
      "permission": {"*": "ask", "amux_memory_get": "deny"},
      "plugin": ["my-plugin"],
    }"""
    config = content(plan("run", "hi", theirs=theirs))
    assert config["model"] == "mine/m"
    assert config["instructions"] == ["/u/rules.md", f"{FILES}/{INSTRUCTIONS_FILE}"]
    assert list(config["mcp"]) == ["git", "amux"]
    assert config["plugin"] == ["my-plugin", f"{FILES}/{PLUGIN_FILE}"]
    # A key the user has keeps its place (OpenCode evaluates the last matching rule), new
    # ones go last: after the user's "*".
    assert list(config["permission"]) == ["*", "amux_memory_get", "amux_memory_search",
                                          "amux_memory_upsert", "amux_memory_forget",
                                          "amux_result_continue"]
    assert config["permission"]["*"] == "ask"


def test_a_permission_string_becomes_a_catch_all_rule_first() -> None:
    config = content(plan("run", "hi", theirs='{"permission": "ask"}'))
    assert config["permission"] == {"*": "ask", **dict.fromkeys(TOOLS, "allow")}


def test_merge_is_deep_for_objects_and_replaces_everything_else() -> None:
    user = {"mcp": {"amux": {"enabled": False}}, "share": "manual", "instructions": ["a"]}
    ours = {"mcp": {"amux": {"type": "local"}}, "share": "disabled", "instructions": ["a", "b"]}
    assert merge(user, ours) == {"mcp": {"amux": {"enabled": False, "type": "local"}},
                                 "share": "disabled", "instructions": ["a", "b"]}


def test_a_broken_config_content_is_refused_naming_the_variable() -> None:
    probe = FakeProbe({}, env={"HOME": "/home/u", CONTENT: '{"model": '})
    with pytest.raises(ValueError, match=f"{CONTENT} is not valid JSON"):
        OPENCODE.user_settings(("run",), probe)
    with pytest.raises(ValueError, match="not a JSON object"):
        OPENCODE.user_settings((), FakeProbe({}, env={CONTENT: "[1]"}))
    with pytest.raises(PlanRefused, match=f"{CONTENT} is not valid JSON.*fix or unset it"):
        OPENCODE.plan(AgentRequest("/usr/bin/opencode", (), memory("mcp"), files_dir=FILES,
                                   user_settings={CONTENT: "{,"}))


def test_the_hook_reads_the_users_value_at_every_launch() -> None:
    assert OPENCODE.user_settings((), FakeProbe({})) == {}
    assert OPENCODE.user_settings((), FakeProbe({}, env={CONTENT: ""})) == {}  # ignored
    value = '{"model": "a/b"} // mine'
    assert OPENCODE.user_settings((), FakeProbe({}, env={CONTENT: value})) == {CONTENT: value}
    assert OPENCODE.user_instructions(("run", "x"), FakeProbe({})) == ()  # OpenCode reads them


@pytest.mark.parametrize("args", [("--continue",), ("run", "-c", "x"), ("-s", "ses_x"),
                                  ("run", "--session=ses_x", "hi"), ("run", "--fork", "hi")])
def test_its_own_session_flags_are_refused(args: tuple[str, ...]) -> None:
    with pytest.raises(ResumeFlagRefused, match="amux run --resume AMUX_SESSION_ID"):
        plan(*args)


@pytest.mark.parametrize("args", [("run", "--attach", "http://localhost:4096", "hi"),
                                  ("run", "--attach=http://h:1", "hi"),
                                  ("attach", "http://localhost:4096")])
def test_another_server_is_refused_with_memory_only(args: tuple[str, ...]) -> None:
    with pytest.raises(PlanRefused, match="another OpenCode server"):
        plan(*args)
    assert plan(*args, with_memory=False).argv[1:] == args


def test_resume_continues_the_session_where_each_form_takes_the_flag() -> None:
    run = plan("--print-logs", "-m", "p/m", "run", "hi", agent_session=SES, resume=True,
               frozen="FROZEN")
    assert run.argv == ("/usr/bin/opencode", "--print-logs", "-m", "p/m", "run", "--session",
                        SES, "hi")
    tui = plan("/some/project", agent_session=SES, resume=True, frozen="FROZEN")
    assert tui.argv == ("/usr/bin/opencode", "--session", SES, "/some/project")
    # The frozen text, rewritten into the same file; no plugin once the id is known.
    [instructions] = run.files
    assert instructions.text == "FROZEN" and run.instructions == "FROZEN"
    assert "plugin" not in content(run)
    again = plan("run", "more", agent_session=SES, resume=True, with_memory=False)
    assert again.argv == ("/usr/bin/opencode", "run", "--session", SES, "more")
    assert again.env.set == {} and again.files == ()


def test_without_memory_only_the_plugin_is_added_to_the_users_config() -> None:
    launch = plan("run", "hi", with_memory=False, theirs='{"model": "a/b"}')
    assert launch.channel == "none" and launch.instructions is None
    assert content(launch) == {"model": "a/b", "plugin": [f"{FILES}/{PLUGIN_FILE}"]}
    assert [f.path for f in launch.files] == [f"{FILES}/{PLUGIN_FILE}"]


@pytest.mark.parametrize(("api", "npm"), [(None, "@ai-sdk/openai-compatible"),
                                          ("anthropic", "@ai-sdk/anthropic")])
def test_an_endpoint_is_a_provider_with_the_key_as_a_reference(api: str | None,
                                                               npm: str) -> None:
    url = "http://127.0.0.1:11434/v1"
    keyed = plan("run", "hi", endpoint=EndpointRequest(url, "qwen3", api,  # type: ignore[arg-type]
                                                       "MY_KEY"))
    config = content(keyed)
    assert config["provider"] == {ENDPOINT_PROVIDER: {
        "npm": npm, "name": "amux run --endpoint",
        "options": {"baseURL": url, "apiKey": "{env:MY_KEY}"},
        "models": {"qwen3": {"name": "qwen3"}}}}
    assert config["model"] == config["small_model"] == f"{ENDPOINT_PROVIDER}/qwen3"
    assert keyed.env.set["OPENCODE_DISABLE_MODELS_FETCH"] == "1"
    assert keyed.env.copy == {} and keyed.argv == ("/usr/bin/opencode", "run", "hi")
    assert "instructions" in config and "mcp" in config  # memory as without the endpoint
    bare = content(plan("run", "hi", endpoint=EndpointRequest(url, "qwen3")))
    assert bare["provider"][ENDPOINT_PROVIDER]["options"]["apiKey"] == NO_KEY
    # The endpoint's model wins over the user's own, as a later layer does.
    theirs = content(plan("run", "hi", theirs='{"model": "a/b"}',
                          endpoint=EndpointRequest(url, "qwen3")))
    assert theirs["model"] == f"{ENDPOINT_PROVIDER}/qwen3"


def finished(*files: SessionFile) -> FinishedRun:
    return FinishedRun(("/usr/bin/opencode", "run", "hi"), "/w", 1.0, 2.0, True, files)


def test_the_session_the_plugin_recorded_is_picked() -> None:
    path = f"{FILES}/{SESSION_FILE}"
    assert pick_session(finished(SessionFile(path, SES, False))) == (SES, None)
    none, why = pick_session(finished())
    assert none is None and why is not None and "no session" in why
    assert "cannot be resumed" in why
    bad, why = pick_session(finished(SessionFile(path, "not-an-id", False)))
    assert bad is None and why is not None and "cannot be resumed" in why
    spec = OPENCODE.session_files({}, FILES)
    assert spec is not None and (spec.directory, spec.pattern) == (FILES, SESSION_FILE)
    assert OPENCODE.new_session_ref("amux-id", FILES) is None


def test_an_isolated_run_reads_only_the_targets_opencode() -> None:
    env = OPENCODE.isolated_env("/home/t").shown()
    assert env["XDG_CONFIG_HOME"] == "/home/t/.config"
    assert env["XDG_DATA_HOME"] == "/home/t/.local/share"
    assert env["XDG_CACHE_HOME"] == "/home/t/.cache"
    assert env["XDG_STATE_HOME"] == "/home/t/.local/state"
    removed = {name for name, value in env.items() if value is None}
    assert removed == {"OPENCODE_CONFIG", "OPENCODE_CONFIG_DIR", "OPENCODE_CONFIG_CONTENT",
                       "OPENCODE_DB", "OPENCODE_TUI_CONFIG", "OPENCODE_PERMISSION",
                       "OPENCODE_AUTH_CONTENT", "OPENCODE_SERVER_PASSWORD",
                       "OPENCODE_SERVER_USERNAME"}


def test_its_version_and_hint() -> None:
    assert OPENCODE.version(0, "1.18.33\n", "") == "1.18.33"
    assert OPENCODE.quick_exit_hint is not None
    assert "opencode providers login" in OPENCODE.quick_exit_hint
    assert "amux run --endpoint URL --model NAME opencode" in OPENCODE.quick_exit_hint
