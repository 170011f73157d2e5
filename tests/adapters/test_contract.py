"""One contract for every adapter: freeze, merge without losing the user's text, suppress
native memory, replay identically on resume, and stay out of the way without memory."""

from __future__ import annotations

import json
import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from amux.adapters import ADAPTERS, for_agent
from amux.adapters.base import (
    ENDPOINT_API_OF,
    PROMPT,
    AgentRequest,
    EndpointRequest,
    LaunchPlan,
    ResumeFlagRefused,
    chosen_uuid,
)
from amux.adapters.fallback import FallbackAdapter
from amux.protocol.render import render
from tests.adapting import USER_ARGS, USER_TEXT, endpoint_plan, memory, plan

RESUME_FLAGS = {"copilot": ["--resume=x", "-p", "hello"],
                "claude": ["--resume", "x"], "codex": ["exec", "resume", "x"],
                "pi": ["--session", "x"], "gemini": ["--resume", "x"],
                "opencode": ["run", "--session", "x", "hello"],
                "kilo": ["run", "--session", "x", "hello"],
                "qwen": ["--continue", "-p", "x"], "cline": ["--id", "x"]}
SUPPRESSED = {  # what each agent's native memory needs turned off (Pi has none)
    "claude": {"env": {"CLAUDE_CODE_DISABLE_AUTO_MEMORY": "1"}},
    "codex": {"argv": ["features.memories=false", "memories.use_memories=false",
                       "memories.generate_memories=false"]},
    "pi": {},
    "opencode": {},  # OpenCode has no built-in long-term memory either
    "cline": {},  # nor has Cline (its "memory bank" is a convention of the user's rules)
    "kilo": {"env": {"XDG_DATA_HOME": "/home/u/.local/share/amux/sessions/s/kilo-data"}},
    "copilot": {"argv": ["--excluded-tools=store_memory,vote_memory"]},
    "gemini": {"argv": ["--policy", "/home/u/.local/share/amux/sessions/s/gemini-policy.toml"],
               "settings": {"experimental.autoMemory": False}},
    "qwen": {"env": {"QWEN_CODE_SYSTEM_SETTINGS_PATH":
                     "/home/u/.local/share/amux/sessions/s/qwen-system-settings.json"},
             "settings": {"memory.enableManagedAutoMemory": False,
                          "memory.enableManagedAutoDream": False}},
}
EPHEMERAL_ARGS = {  # the agent's own mode that keeps no session
    "claude": ["-p", "--no-session-persistence", "hello"],
    "codex": ["exec", "--ephemeral", "hello"],
    "pi": ["--no-session", "-p", "hello"],
    "qwen": ["--chat-recording=false", "-p", "hello"],
}
NO_EPHEMERAL_MODE = {"gemini", "opencode", "copilot", "cline", "kilo"}
"""Agents that keep every session (nothing to pass on, nothing to refuse)."""
OWN_FILES = {"opencode", "copilot", "cline", "kilo"}
"""Agents that read all of the user's instructions themselves (AGENTS.md, their config's
instruction files), before amux's own file: the merged text is the protocol alone, and
that order is proven with the real agent (tests/e2e/test_opencode.py)."""
RESUMES_IN_UI = {"cline"}
"""Agents that resume a session only in their interactive UI (Cline's `--id` drops the
prompt and needs a terminal)."""
NAMES = sorted(ADAPTERS)


def carriers(launch: LaunchPlan, needle: str) -> list[str]:
    """The arguments, files and variables of `launch` that contain `needle`."""
    return ([arg for arg in launch.argv if needle in arg]
            + [file.path for file in launch.files if needle in file.text]
            + [f"${name}" for name, value in launch.env.set.items() if needle in value])


@pytest.mark.parametrize("name", NAMES)
def test_merges_the_protocol_after_the_users_own_instructions(name: str) -> None:
    launch = plan(name)
    protocol = render(ADAPTERS[name].channel)  # type: ignore[arg-type]
    own = name in OWN_FILES
    assert launch.instructions == (protocol if own else f"{USER_TEXT}\n\n{protocol}")
    assert launch.channel == ADAPTERS[name].channel
    # The merged text reaches the agent once, in one argument or one file, whatever quoting
    # the agent's syntax needs; the user's own text goes only there, and their other
    # arguments stay.
    title = protocol.splitlines()[0]
    assert len(carriers(launch, title)) == 1
    assert carriers(launch, "British") == ([] if own else carriers(launch, title))
    assert [file.text for file in launch.files if title in file.text] in (
        [], [launch.instructions])
    assert "hello" in launch.argv


@pytest.mark.parametrize("name", NAMES)
def test_native_memory_is_suppressed_for_this_launch_only(name: str) -> None:
    launch = plan(name)
    assert launch.suppression == SUPPRESSED[name]
    for variable, value in launch.suppression.get("env", {}).items():
        assert launch.env.set[variable] == value
    for arg in launch.suppression.get("argv", []):
        assert arg in launch.argv
    without = plan(name, with_memory=False)
    assert not set(launch.suppression.get("env", {})) & set(without.env.set)
    assert not set(launch.suppression.get("argv", [])) & set(without.argv)


@pytest.mark.parametrize("name", NAMES)
def test_the_memory_tools_are_wired_for_the_adapters_channel(name: str) -> None:
    launch, given = plan(name), memory(ADAPTERS[name].channel)
    if launch.channel == "mcp":  # the MCP server, started with the session's config
        assert len(carriers(launch, given.mcp_command[0])) == 1
        assert len(carriers(launch, given.env["AMUX_MEMORY_CONFIG"])) == 1
    else:  # the CLI on PATH, with the session's config in the environment
        assert launch.channel == "cli"
        assert launch.env.path == (given.bin_dir,) and dict(launch.env.set) == given.env


@pytest.mark.parametrize("name", NAMES)
def test_resume_replays_the_frozen_plan_identically(name: str) -> None:
    first = plan(name)
    again = plan(name, resume=True, frozen=first.instructions)
    assert again.instructions == first.instructions
    assert again.env == first.env and again.suppression == first.suppression
    assert again.env.path == first.env.path and again.files == first.files
    # Resuming even with *other* user instructions keeps the frozen text.
    other = plan(name, resume=True, frozen=first.instructions,
                 args=[a.replace("British", "Klingon") for a in USER_ARGS[name]])
    assert other.instructions == first.instructions


def test_every_agent_says_whether_it_has_an_ephemeral_mode() -> None:
    assert set(EPHEMERAL_ARGS) | NO_EPHEMERAL_MODE == set(NAMES)
    assert not set(EPHEMERAL_ARGS) & NO_EPHEMERAL_MODE


@pytest.mark.parametrize("with_memory", [True, False], ids=["memory", "no memory"])
@pytest.mark.parametrize("name", sorted(EPHEMERAL_ARGS))
def test_a_session_the_agent_keeps_nothing_of_is_not_resumable(name: str,
                                                                with_memory: bool) -> None:
    ephemeral = plan(name, with_memory=with_memory, args=EPHEMERAL_ARGS[name])
    assert ephemeral.not_resumable and "resume" in ephemeral.not_resumable
    assert all(arg in ephemeral.argv for arg in EPHEMERAL_ARGS[name])  # passed on
    assert plan(name, with_memory=with_memory).not_resumable is None


@pytest.mark.parametrize("name", NAMES)
def test_the_agents_own_resume_flags_are_refused(name: str) -> None:
    with pytest.raises(ResumeFlagRefused, match="amux run --resume"):
        plan(name, args=RESUME_FLAGS[name])


@pytest.mark.parametrize("name", NAMES)
def test_the_agents_own_resume_command_is_one_the_doctor_checks(name: str) -> None:
    """What `amux run --resume` names for a session started outside amux: the flag is one
    of the adapter's `requires`, so `amux doctor` finds it in the installed agent, and a
    plan refuses it as the agent's own resume flag."""
    adapter = ADAPTERS[name]
    own = adapter.own_resume("5b0c7a52-9f4e-4e1a-8d0e-1f6a2b3c4d5e")
    assert own is not None and own[-1].endswith("5b0c7a52-9f4e-4e1a-8d0e-1f6a2b3c4d5e")
    flag = own[0].partition("=")[0]
    assert flag in {r.name for r in adapter.requires if r.kind == "flag"}
    if flag.startswith("-"):
        with pytest.raises(ResumeFlagRefused):
            plan(name, args=own)


@pytest.mark.parametrize("name", NAMES)
def test_without_memory_the_agent_keeps_its_own_policy(name: str) -> None:
    launch = plan(name, with_memory=False)
    assert launch.channel == "none" and launch.instructions is None
    assert launch.env.set == {} and launch.suppression == {} and launch.env.path == ()
    assert all(arg in launch.argv for arg in USER_ARGS[name])  # the user's args untouched
    assert not any("amux" in arg for arg in launch.argv)


def test_claude_keeps_the_users_mcp_servers_and_allows_only_memory_tools() -> None:
    theirs = json.dumps({"mcpServers": {"git": {"command": "git-mcp"}}})
    launch = plan("claude", args=["--mcp-config", theirs, "-p", "x"])
    assert theirs in launch.argv
    ours = next(a for a in launch.argv if a.startswith("--mcp-config="))
    assert list(json.loads(ours.partition("=")[2])["mcpServers"]) == ["amux"]
    allowed = next(a for a in launch.argv if a.startswith("--allowedTools="))
    assert allowed.partition("=")[2].split(",") == [
        f"mcp__amux__{tool}" for tool in ("memory_search", "memory_get", "memory_upsert",
                                          "memory_forget", "result_continue")]


def test_claude_always_loads_only_the_amux_server() -> None:
    """Claude's tool search would defer the memory tools; `alwaysLoad` must be the JSON
    boolean true (a string makes Claude drop the server silently), on our entry only."""
    theirs = json.dumps({"mcpServers": {"git": {"command": "git-mcp"}}})
    launch = plan("claude", args=["--mcp-config", theirs, "-p", "x"])
    ours = next(a for a in launch.argv if a.startswith("--mcp-config="))
    server = json.loads(ours.partition("=")[2])["mcpServers"]["amux"]
    assert server["alwaysLoad"] is True
    assert '"alwaysLoad": true' in ours
    assert theirs in launch.argv and "--strict-mcp-config" not in launch.argv
    # The user's own flags in the `=` form stay after ours, unchanged.
    other = plan("claude", args=[f"--mcp-config={theirs}", "--allowedTools=Bash", "-p", "x"])
    assert [arg for arg in other.argv if arg.startswith("--mcp-config=")] == [
        ours, f"--mcp-config={theirs}"]


def test_codex_takes_config_instructions_when_no_override_is_given() -> None:
    launch = ADAPTERS["codex"].plan(AgentRequest(
        executable="/usr/bin/codex", args=("exec", "hi"), memory=memory("mcp"),
        user_instructions=("From config.toml",)))
    assert launch.instructions is not None
    assert launch.instructions.startswith("From config.toml\n\namux memory protocol v")


def test_any_other_agent_launches_unchanged_with_a_report() -> None:
    adapter = for_agent("/usr/local/bin/aider")
    assert isinstance(adapter, FallbackAdapter)
    launch = adapter.plan(AgentRequest(executable="/usr/local/bin/aider", args=("--yes",),
                                       memory=None))
    assert launch.argv == ("/usr/local/bin/aider", "--yes")
    assert launch.channel == "none" and "no memory capability for aider" in launch.warnings[0]


@pytest.mark.parametrize(("name", "again", "fragment"), [
    ("claude", ["--append-system-prompt", "theirs", "-p", "x"], "--append-system-prompt 'theirs'"),
    ("codex", ["-c", 'developer_instructions="theirs"', "exec", "x"],
     "-c developer_instructions= 'theirs'"),
    ("pi", ["--append-system-prompt", "theirs", "-p", "x"], "--append-system-prompt 'theirs'"),
    ("qwen", ["--append-system-prompt", "theirs", "-p", "x"], "--append-system-prompt 'theirs'"),
])
def test_instructions_given_again_on_resume_are_reported_not_merged(
        name: str, again: list[str], fragment: str) -> None:
    first = plan(name)
    assert not first.warnings
    resumed = plan(name, resume=True, frozen=first.instructions, args=again)
    assert resumed.instructions == first.instructions  # byte for byte
    assert len(resumed.warnings) == 1 and fragment in resumed.warnings[0]
    assert "start a new session to change them" in resumed.warnings[0]
    assert not plan(name, resume=True, frozen=first.instructions).warnings  # none given


@pytest.mark.parametrize("name", NAMES)
def test_every_agent_fact_is_the_adapters(name: str) -> None:
    """What eval, doctor, help and messages say of an agent comes from its adapter: a name
    for people, its credential variables, instruction files, MCP tool naming (exactly for
    an MCP channel) and one headless turn that stays in the run's home."""
    adapter = ADAPTERS[name]
    assert adapter.name == name and adapter.display_name and adapter.key_variables
    assert adapter.instruction_files and all("/" not in f for f in adapter.instruction_files)
    assert (adapter.mcp_tool_prefix is None) == (adapter.channel != "mcp")
    headless = adapter.headless("/run/home", "/run/tmp")
    assert headless.args.count(PROMPT) == 1
    for path in (*headless.dirs, *(file.path for file in headless.files),
                 *([headless.answer_file] if headless.answer_file else [])):
        assert path.startswith(("/run/home/", "/run/tmp/")), path


@pytest.mark.parametrize("name", NAMES)
def test_every_agent_says_how_it_runs_one_prompt_and_when_it_needs_a_terminal(name: str) -> None:
    """Its non-interactive form (the example a start without a terminal gets, and the
    README's), and which starts need a terminal: without arguments, or with only what
    amux adds to a launch with memory, its UI starts; its prompt form and `--help` do
    not start it."""
    adapter = ADAPTERS[name]
    assert adapter.prompt_args.count(PROMPT) == 1
    assert adapter.without_terminal in ("fails", "ends", "hangs")
    assert adapter.starts_ui(()) and not adapter.starts_ui(("--help",))
    one = tuple("Hi." if arg == PROMPT else arg for arg in adapter.prompt_args)
    assert not adapter.starts_ui(one)
    pointed = EndpointRequest("http://127.0.0.1:11434/v1", "m",
                              next(iter(adapter.endpoint_paths)))
    for resume in (False, True):  # amux's own arguments do not hide what the user's start
        assert adapter.starts_ui(plan(name, args=[], resume=resume).argv[1:])
        assert adapter.starts_ui(plan(name, args=list(one), resume=resume).argv[1:]) == (
            resume and name in RESUMES_IN_UI)
    assert adapter.starts_ui(endpoint_plan(name, pointed, args=[]).argv[1:])
    assert not adapter.starts_ui(endpoint_plan(name, pointed, args=list(one)).argv[1:])


@pytest.mark.parametrize("name", NAMES)
def test_every_agent_says_the_url_form_of_each_api_kind_it_speaks(name: str) -> None:
    """Its default kind first (what `--endpoint-api` defaults to); an OpenAI base URL is
    the API's `/v1` (its base may end in anything else: only the root is put right)."""
    paths = ADAPTERS[name].endpoint_paths
    assert next(iter(paths)) == ENDPOINT_API_OF[ADAPTERS[name].model_api]
    assert set(paths.values()) <= {"", "/v1"} and paths.get("openai", "/v1") == "/v1"
    assert FallbackAdapter().endpoint_paths == {}


@given(st.uuids(), st.text())
def test_the_chosen_session_uuid_is_uuid5(namespace: uuid.UUID, session_id: str) -> None:
    """`chosen_uuid` spells out `uuid.uuid5` (its module costs a launch ~5 ms): the same ids
    as before, for any namespace and amux session id."""
    assert chosen_uuid(str(namespace), session_id) == str(uuid.uuid5(namespace, session_id))
