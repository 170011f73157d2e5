"""The Copilot CLI adapter's plan: the protocol file appended to the user's instruction
directories, the amux server for this launch with exactly its five tools allowed, Copilot's
own memory tools excluded, its session chosen up front, what it refuses, the endpoint, the
isolated reset, the doctor's unpacked code and the quick-exit cause."""

from __future__ import annotations

import json

import pytest

from amux.adapters import ADAPTERS
from amux.adapters.base import (
    NO_KEY,
    AgentRequest,
    EndpointRefused,
    EndpointRequest,
    LaunchPlan,
    PlanRefused,
    ResumeFlagRefused,
)
from amux.adapters.copilot import (
    ALLOW,
    DIRS,
    EXCLUDE,
    LIMITS,
    CopilotAdapter,
    instruction_dirs,
    quiet_answer,
)
from tests.adapting import FakeProbe, memory

SESSION_DIR = "/home/u/.local/share/amux/sessions/s"
ADAPTER = CopilotAdapter()


def plan(*args: str, resume: bool = False, with_memory: bool = True,
         settings: dict[str, str] | None = None,
         endpoint: EndpointRequest | None = None) -> LaunchPlan:
    return ADAPTER.plan(AgentRequest(
        executable="/usr/bin/copilot", args=args, memory=memory("mcp") if with_memory else None,
        agent_session="5b0c7a52-0000-4000-8000-000000000001", resume=resume,
        files_dir=SESSION_DIR, endpoint=endpoint, user_settings=settings or {}))


def test_registered_under_its_command_name() -> None:
    assert isinstance(ADAPTERS["copilot"], CopilotAdapter)
    assert ADAPTER.display_name == "Copilot CLI" and ADAPTER.package == "@github/copilot"


def test_a_new_launch_with_memory() -> None:
    launch = plan("-p", "hello")
    ref = "5b0c7a52-0000-4000-8000-000000000001"
    mcp = f"{SESSION_DIR}/copilot-mcp.json"
    assert launch.argv == ("/usr/bin/copilot", f"--session-id={ref}",
                           f"--additional-mcp-config=@{mcp}", ALLOW, EXCLUDE, "-p", "hello")
    assert ALLOW == ("--allow-tool=amux(memory_search),amux(memory_get),amux(memory_upsert),"
                     "amux(memory_forget),amux(result_continue)")
    assert EXCLUDE == "--excluded-tools=store_memory,vote_memory"
    assert launch.env.set == {DIRS: SESSION_DIR}
    instructions, config = launch.files
    assert instructions.path == f"{SESSION_DIR}/amux.instructions.md"
    assert instructions.text == launch.instructions == memory("mcp").protocol
    assert config.path == mcp and config.mode == 0o600
    server = json.loads(config.text)["mcpServers"]["amux"]
    assert server == {"command": "/opt/amux/bin/amux", "args": ["memory", "mcp"],
                      "env": memory("mcp").env,  # the config's path only, never a token
                      "disableToolCache": True}  # no tool list kept per session
    assert launch.warnings == (LIMITS,) and launch.channel == "mcp"


def test_the_users_instruction_directories_come_first() -> None:
    probe = FakeProbe({}, env={DIRS: "/a,/b,"})
    settings = dict(ADAPTER.user_settings((), probe))
    assert plan(settings=settings).env.set[DIRS] == f"/a,/b,{SESSION_DIR}"
    assert instruction_dirs(None, "/x") == "/x"
    assert ADAPTER.user_settings((), FakeProbe({})) == {}


def test_a_resume_names_the_session_and_replays_the_files() -> None:
    first = plan("-p", "one")
    again = ADAPTER.plan(AgentRequest(
        executable="/usr/bin/copilot", args=("-p", "two"), memory=memory("mcp"),
        frozen_instructions=first.instructions, agent_session=first.agent_session,
        resume=True, files_dir=SESSION_DIR))
    assert again.argv[1] == f"--resume={first.agent_session}"
    assert again.files == first.files and again.env == first.env and not again.warnings


@pytest.mark.parametrize("flag", ["-r", "--resume", "--continue", "--session-id=x",
                                  "--new-session-id", "--connect"])
def test_its_own_session_flags_are_refused(flag: str) -> None:
    with pytest.raises(ResumeFlagRefused, match="amux run --resume"):
        plan(flag, "-p", "x")


@pytest.mark.parametrize(("args", "with_memory", "match"), [
    (("--enable-memory", "-p", "x"), True, "Copilot's own memory"),
    (("--no-custom-instructions", "-p", "x"), True, "drop the memory protocol"),
    (("--config-dir", "/c", "-p", "x"), False, "COPILOT_HOME"),
    (("--acp",), False, "another client"),
])
def test_what_would_defeat_the_launch_is_refused(args: tuple[str, ...], with_memory: bool,
                                                 match: str) -> None:
    with pytest.raises(PlanRefused, match=match):
        plan(*args, with_memory=with_memory)


def test_without_memory_copilot_is_as_it_is() -> None:
    launch = plan("--enable-memory", "-p", "x", with_memory=False)
    assert launch.argv[2:] == ("--enable-memory", "-p", "x") and not launch.files
    assert launch.env.set == {} and launch.instructions is None


def test_the_users_own_tool_rules_stay_and_are_named() -> None:
    launch = plan("--excluded-tools=glob", "--deny-tool=shell", "-p", "x")
    assert launch.argv[-3:] == ("--excluded-tools=glob", "--deny-tool=shell", "-p", "x")[-3:]
    assert EXCLUDE in launch.argv  # Copilot unions repeated --excluded-tools
    assert any("--deny-tool" in warning for warning in launch.warnings)


def test_an_endpoint_is_copilots_own_provider_for_this_launch() -> None:
    url = "http://127.0.0.1:11434"
    openai = plan("-p", "x", endpoint=EndpointRequest(url + "/v1", "qwen3", None, "MY_KEY"))
    assert openai.argv[1] == "--no-auto-update"
    assert {k: v for k, v in openai.env.set.items() if k != DIRS} == {
        "COPILOT_PROVIDER_BASE_URL": url + "/v1", "COPILOT_PROVIDER_TYPE": "openai",
        "COPILOT_PROVIDER_WIRE_API": "completions", "COPILOT_MODEL": "qwen3"}
    assert openai.env.copy == {"COPILOT_PROVIDER_API_KEY": "MY_KEY"}
    assert {"GH_TOKEN", "GITHUB_TOKEN", "COPILOT_GITHUB_TOKEN"} <= set(openai.env.unset)
    assert "COPILOT_PROVIDER_API_KEY" not in openai.env.unset
    anthropic = plan(with_memory=False, endpoint=EndpointRequest(url, "m", "anthropic"))
    assert anthropic.env.set["COPILOT_PROVIDER_TYPE"] == "anthropic"
    assert anthropic.env.set["COPILOT_PROVIDER_API_KEY"] == NO_KEY
    assert "COPILOT_PROVIDER_WIRE_API" in anthropic.env.unset
    with pytest.raises(EndpointRefused, match="OpenAI-compatible"):
        plan(endpoint=EndpointRequest(url, "m", "gemini"))


def test_sessions_kept_isolation_version_and_headless() -> None:
    assert ADAPTER.kept_session("id", {"HOME": "/h"}) == ("/h/.copilot/session-state/id",
                                                          "events.jsonl")
    assert ADAPTER.kept_session("id", {"COPILOT_HOME": "/c"})[0] == "/c/session-state/id"
    assert ADAPTER.new_session_ref("s", "/d") == ADAPTER.new_session_ref("s", "/e")
    reset = ADAPTER.isolated_env("/home/t").shown()
    assert reset["COPILOT_HOME"] is None and reset[DIRS] is None
    assert reset["COPILOT_PROVIDER_BASE_URL"] is None and reset["COPILOT_PKG_CACHE_HOME"] is None
    assert ADAPTER.version(0, "GitHub Copilot CLI 1.0.102.\nRun 'copilot update'…\n", "") \
        == "1.0.102"
    assert ADAPTER.version(1, "", "error") is None
    headless = ADAPTER.headless("/run/home", "/run/tmp")
    assert headless.env.set["COPILOT_HOME"] == "/run/home/.copilot"
    assert quiet_answer("● Disabled tools: glob\n\nDone.\n\n") == "Done."


def test_the_doctor_finds_the_unpacked_package() -> None:
    patterns = ADAPTER.unpacked_code({"HOME": "/h", "COPILOT_PKG_CACHE_HOME": "/p"}, "1.0.102")
    assert patterns == ("/p/pkg/*/1.0.102", "/h/.cache/copilot/pkg/*/1.0.102",
                        "/h/.copilot/pkg/*/1.0.102")
    assert ADAPTER.unpacked_code({}, None) == ()


@pytest.mark.parametrize(("argv", "ui"), [
    ((), True), (("--model", "m"), True), (("-p", "x"), False), (("-i", "x"), False),
    (("--prompt=x",), False), (("mcp", "list"), False), (("--help",), False),
])
def test_an_interactive_start_is_one_without_a_prompt_or_subcommand(argv: tuple[str, ...],
                                                                    ui: bool) -> None:
    """Copilot reads its prompt from a stdin that is no terminal, and ends at once with
    "No prompt provided": the launch names that cause for such a start."""
    assert ADAPTER.starts_ui(argv) is ui
