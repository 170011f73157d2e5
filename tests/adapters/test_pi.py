"""Pi's adapter: what Pi itself would append (its `APPEND_SYSTEM.md`, the files its
`--append-system-prompt` names), read through a fake `Probe` as Pi 0.73.1 reads them, and
its ephemeral `--no-session`. The real Pi runs in tests/e2e/test_pi.py."""

from __future__ import annotations

import json
from collections.abc import Mapping

import pytest

from amux.adapters.base import AgentRequest, LaunchPlan, Memory, PlanFile, ResumeFlagRefused
from amux.adapters.pi import EPHEMERAL, MCP_EXTENSION, PiAdapter
from amux.protocol.render import render
from tests.adapting import FakeProbe

PI = PiAdapter()
CWD = "/work/project"
PROJECT = f"{CWD}/.pi/APPEND_SYSTEM.md"
GLOBAL = "/home/u/.pi/agent/APPEND_SYSTEM.md"
SESSION_DIR = "/home/u/.local/share/amux/sessions/s"
MEMORY = Memory(protocol=render("cli"), mcp_command=("/opt/amux", "memory", "mcp"),
                env={"AMUX_MEMORY_CONFIG": "/run/s/memory.json"}, bin_dir="/run/s/bin")


class Probe(FakeProbe):
    """A FakeProbe whose files may also be an error to raise, as the real one does."""

    def read_text(self, path: str) -> str | None:
        found = self.files.get(path)
        if isinstance(found, OSError):
            raise found
        return super().read_text(path)


def appended(args: tuple[str, ...], files: Mapping[str, str | OSError],
             **env: str) -> tuple[str, ...]:
    probe = Probe(dict(files), env={"HOME": "/home/u", **env}, cwd=CWD)  # type: ignore[arg-type]
    return PI.user_instructions(args, probe)


def test_the_projects_append_system_md_comes_first_and_alone() -> None:
    both = {PROJECT: "Project rules.\n", GLOBAL: "Global rules.\n"}
    assert appended(("-p", "hi"), both) == ("Project rules.\n",)  # Pi reads only the first
    assert appended(("-p", "hi"), {GLOBAL: "Global rules.\n"}) == ("Global rules.\n",)
    assert appended(("-p", "hi"), {}) == ()


def test_the_global_file_is_in_pi_coding_agent_dir() -> None:
    files = {"/cfg/pi/APPEND_SYSTEM.md": "From the agent dir.", GLOBAL: "Not this one."}
    assert appended((), files, PI_CODING_AGENT_DIR="/cfg/pi") == ("From the agent dir.",)
    tilde = {"/home/u/pi-agent/APPEND_SYSTEM.md": "Tilde expanded."}
    assert appended((), tilde, PI_CODING_AGENT_DIR="~/pi-agent") == ("Tilde expanded.",)


def test_a_flag_naming_a_file_is_its_text_and_flags_join_with_a_blank_line() -> None:
    files = {f"{CWD}/extra.md": "From a file.\n", "/abs/rules.md": "Absolute.",
             PROJECT: "Never read: a flag turns Pi's discovery off."}
    args = ("--append-system-prompt", "extra.md", "-p", "--append-system-prompt", "Literal.",
            "--append-system-prompt", "/abs/rules.md", "hi")
    assert appended(args, files) == ("From a file.\n\n\nLiteral.\n\nAbsolute.",)


def test_flag_values_pi_would_not_read_as_files() -> None:
    files: dict[str, str | OSError] = {f"{CWD}/adir": IsADirectoryError(21, "Is a directory"),
                                        PROJECT: "Unused."}
    assert appended(("--append-system-prompt", "adir"), files) == ("adir",)  # Pi: warns
    assert appended(("--append-system-prompt", ""), files) == ()  # dropped, still no discovery
    # Another option's value is not a flag, and the `=` form is no option of Pi's.
    assert appended(("--model", "--append-system-prompt", "x"), files) == ("Unused.",)
    assert appended(("--append-system-prompt=x",), files) == ("Unused.",)


def test_an_unreadable_append_system_md_is_named() -> None:
    files: dict[str, str | OSError] = {PROJECT: PermissionError(13, "Permission denied")}
    with pytest.raises(ValueError, match=r"cannot read Pi's /work/project/\.pi/APPEND_SYSTEM"):
        appended((), files)
    not_a_dir: dict[str, str | OSError] = {PROJECT: NotADirectoryError(20, "Not a directory"),
                                            GLOBAL: "Global."}
    assert appended((), not_a_dir) == ("Global.",)  # `.pi` is a file: Pi looks further


def plan(*args: str, user: tuple[str, ...] = (), memory: Memory | None = MEMORY,
         resume: bool = False, frozen: str | None = None) -> LaunchPlan:
    return PI.plan(AgentRequest(
        executable="/usr/bin/pi", args=args, memory=memory, user_instructions=user,
        frozen_instructions=frozen, agent_session=f"{SESSION_DIR}/pi-session.jsonl",
        resume=resume, files_dir=SESSION_DIR))


def test_the_merged_text_goes_to_pi_as_a_file() -> None:
    launch = plan("-p", "--append-system-prompt", "extra.md", "hi", user=("From a file.",))
    path = f"{SESSION_DIR}/pi-append-system.md"
    assert launch.instructions == f"From a file.\n\n{render('cli')}"
    assert launch.files == (PlanFile(path, launch.instructions or ""),)
    assert launch.argv == ("/usr/bin/pi", "--session", f"{SESSION_DIR}/pi-session.jsonl",
                           "--append-system-prompt", path, "-p", "hi")
    again = plan("-p", "--append-system-prompt", "other.md", "more", resume=True,
                 frozen=launch.instructions)
    assert again.files == launch.files  # rewritten from the frozen text on every launch
    no_dir = PI.plan(AgentRequest(executable="/usr/bin/pi", args=(), memory=MEMORY))
    assert no_dir.files == () and no_dir.argv[-1] == no_dir.instructions


@pytest.mark.parametrize("memory", [MEMORY, None])
def test_no_session_is_ephemeral_and_never_resumable(memory: Memory | None) -> None:
    launch = plan("--no-session", "-p", "hi", memory=memory)
    assert "--session" not in launch.argv and "--no-session" in launch.argv
    assert launch.agent_session is None
    assert launch.not_resumable == EPHEMERAL and "ephemeral" in EPHEMERAL
    assert plan("-p", "hi", memory=memory).not_resumable is None


def test_no_session_on_resume_and_fork_are_refused() -> None:
    with pytest.raises(ResumeFlagRefused, match="ephemeral"):
        plan("--no-session", resume=True, frozen="x")
    with pytest.raises(ResumeFlagRefused, match="amux run --resume"):
        plan("--fork", "abc")


# -- Pi with MCP (0.99.0 on; pinned 1.6.0) -------------------------------------------------

MCP_MEMORY = MEMORY._replace(protocol=render("mcp"))


def mcp_plan(*args: str, user: tuple[str, ...] = (), resume: bool = False,
             frozen: str | None = None, ref: str = f"{SESSION_DIR}/pi-session.jsonl",
             version: str | None = "1.6.0", memory: Memory | None = MCP_MEMORY) -> LaunchPlan:
    return PI.plan(AgentRequest(
        executable="/usr/bin/pi", args=args, memory=memory, user_instructions=user,
        frozen_instructions=frozen, agent_session=ref, resume=resume, files_dir=SESSION_DIR,
        version=version))


@pytest.mark.parametrize(("version", "channel"), [
    ("1.6.0", "mcp"), ("0.99.0", "mcp"), ("v1.0.0-beta.1", "mcp"), ("0.98.9", "cli"),
    ("0.73.1", "cli"), (None, "cli"), ("pi 2", "cli"), ("fake-agent 1.0", "cli")])
def test_the_version_chooses_the_route(version: str | None, channel: str) -> None:
    from amux.adapters.base import channel_for

    assert channel_for(PI, version) == channel
    assert PI.channel == "cli"  # a version not known: the route every Pi runs


def launch_data(launch: LaunchPlan) -> dict[str, object]:
    [data] = [f for f in launch.files if f.path.endswith("/pi-amux.json")]
    assert data.path == launch.env.set["AMUX_PI_LAUNCH"] and data.mode == 0o600
    found: dict[str, object] = json.loads(data.text)
    return found


def test_pi_with_mcp_gets_the_tools_and_the_protocol_from_one_extension() -> None:
    launch = mcp_plan("-p", "hi")
    path = "/home/u/.local/share/amux/pi-amux.js"  # the amux home: one text, one path
    session_id = launch.argv[2]
    assert launch.argv == ("/usr/bin/pi", "--session-id", session_id, "--extension", path,
                           "-p", "hi")
    assert launch.channel == "mcp" and launch.instructions == render("mcp")
    assert launch.agent_session == session_id and not session_id.startswith("/")
    assert launch.env.path == ()  # no `amux` on PATH: the tools are MCP's
    extension = launch.files[0]
    assert extension == PlanFile(path, MCP_EXTENSION)
    assert launch_data(launch) == {
        "server": {"command": "/opt/amux", "args": ["memory", "mcp"],
                   "env": {"AMUX_MEMORY_CONFIG": "/run/s/memory.json"},
                   "exposure": "direct", "description": "amux shared memory"},
        "text": render("mcp"), "replace": False}  # after what Pi appends itself
    assert mcp_plan("-p", "other", ref="/x/sessions/t/pi-session.jsonl").files[0].text == \
        MCP_EXTENSION  # the same text for every launch: Pi's loader compiles it once
    assert "AMUX_TOKEN" not in MCP_EXTENSION and 'registerMcpServer("amux"' in MCP_EXTENSION


def test_the_users_append_system_prompt_is_frozen_with_the_protocol() -> None:
    launch = mcp_plan("--append-system-prompt", "extra.md", "-p", "hi", user=("From a file.",))
    assert launch.instructions == f"From a file.\n\n{render('mcp')}"
    assert "--append-system-prompt" not in launch.argv  # it replaced Pi's discovery: so do we
    data = launch_data(launch)
    assert data["text"] == launch.instructions and data["replace"] is True
    again = mcp_plan("-p", "more", resume=True, ref=launch.agent_session or "",
                     frozen=launch.instructions)
    assert again.files == launch.files and again.argv[1:3] == launch.argv[1:3]
    plain = mcp_plan("-p", "more", resume=True, ref=launch.agent_session or "",
                     frozen=render("mcp"))
    assert launch_data(plain)["replace"] is False


def test_the_session_id_is_chosen_up_front_and_kept() -> None:
    first, second = mcp_plan("-p", "hi"), mcp_plan("-p", "hi", ref="/other/pi-session.jsonl")
    assert first.agent_session == mcp_plan("-p", "again").agent_session  # the same every time
    assert first.agent_session != second.agent_session
    resumed = mcp_plan("-p", "x", resume=True, ref="abc-123", frozen=render("mcp"))
    assert resumed.argv[1:3] == ("--session-id", "abc-123")
    # A session started on the command-line route resumes as it started, on any Pi.
    old = mcp_plan("-p", "x", resume=True, ref=f"{SESSION_DIR}/pi-session.jsonl",
                   frozen=render("mcp"))
    assert old.argv[1:3] == ("--session", f"{SESSION_DIR}/pi-session.jsonl")
    env = {"HOME": "/home/u"}
    assert PI.kept_session("abc-123", env) == ("/home/u/.pi/agent/sessions", "*_abc-123.jsonl")
    assert PI.kept_session("abc", {**env, "PI_CODING_AGENT_DIR": "/cfg"}) == (
        "/cfg/sessions", "*_abc.jsonl")
    assert PI.kept_session("abc", {**env, "PI_CODING_AGENT_SESSION_DIR": "/s"}) == (
        "/s", "*_abc.jsonl")
    assert PI.kept_session(f"{SESSION_DIR}/pi-session.jsonl", env) == (
        SESSION_DIR, "pi-session.jsonl")
    assert PI.own_resume("abc-123") == ("--session", "abc-123")


def test_without_memory_pi_with_mcp_is_as_it_is_with_its_session_id() -> None:
    launch = mcp_plan("-p", "hi", memory=None)
    assert launch.argv[:2] == ("/usr/bin/pi", "--session-id") and launch.argv[3:] == ("-p", "hi")
    assert launch.files == () and launch.channel == "none"


def test_options_that_turn_mcp_off_are_said_and_session_flags_refused() -> None:
    for flag in ("--no-mcp", "--no-extensions", "-ne"):
        [warning] = mcp_plan(flag, "-p", "hi").warnings
        assert warning.startswith(f"{flag} leaves Pi without MCP")
    with pytest.raises(ResumeFlagRefused, match="--session-id would resume"):
        mcp_plan("--session-id", "mine")
    with pytest.raises(ResumeFlagRefused, match="ephemeral"):
        mcp_plan("--no-session", resume=True, frozen="x")
    ephemeral = mcp_plan("--no-session", "-p", "hi")
    assert ephemeral.not_resumable == EPHEMERAL and ephemeral.agent_session is None
    assert "--session-id" not in ephemeral.argv


def test_pi_before_mcp_keeps_the_command_line_route_byte_for_byte() -> None:
    for version in ("0.73.1", None):
        launch = mcp_plan("-p", "hi", version=version, memory=MEMORY)
        assert launch == plan("-p", "hi")


def test_an_endpoints_key_variable_is_named_as_each_pi_reads_it() -> None:
    """Pi 0.77.0 on reads a provider's `apiKey` as a literal unless it is `${NAME}`; before,
    a bare name of a set variable was its value."""
    from amux.adapters.base import EndpointRequest

    endpoint = EndpointRequest("http://127.0.0.1:9/v1", "m", key_env="MY_KEY")
    for version, key in (("1.6.0", '"apiKey": "${MY_KEY}"'), ("0.77.0", '"apiKey": "${MY_KEY}"'),
                         ("0.73.1", '"apiKey": "MY_KEY"'), (None, '"apiKey": "MY_KEY"')):
        launch = PI.plan(AgentRequest(executable="/usr/bin/pi", args=("-p", "hi"), memory=None,
                                      files_dir=SESSION_DIR, endpoint=endpoint,
                                      agent_session=f"{SESSION_DIR}/pi-session.jsonl",
                                      version=version))
        [provider] = [f for f in launch.files if f.path.endswith("/pi-endpoint.js")]
        assert key in provider.text, (version, provider.text)
