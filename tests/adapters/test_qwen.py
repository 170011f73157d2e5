"""The Qwen Code adapter: one merged `--append-system-prompt` and one merged `--mcp-config`,
native memory off through the launch's own system settings file (the machine's carried
over), the session chosen up front, and its hooks through the fake probe. The real CLI:
tests/e2e/test_qwen.py."""

from __future__ import annotations

import json
import uuid

import pytest

from amux.adapters import ADAPTERS
from amux.adapters.base import (
    NO_KEY,
    PROMPT,
    AgentRequest,
    EndpointRequest,
    LaunchPlan,
    PlanRefused,
    ResumeFlagRefused,
)
from amux.adapters.qwen import MCP_FILE, SETTINGS_FILE, QwenAdapter
from tests.adapting import FakeProbe, memory

SESSION_DIR = "/home/u/.local/share/amux/sessions/s"
OURS = f"{SESSION_DIR}/{SETTINGS_FILE}"
ADAPTER = QwenAdapter()


def plan(*args: str, probe: FakeProbe | None = None, resume: bool = False,
         frozen: str | None = None, with_memory: bool = True,
         endpoint: EndpointRequest | None = None) -> LaunchPlan:
    return ADAPTER.plan(AgentRequest(
        executable="/usr/bin/qwen", args=args, memory=memory("mcp") if with_memory else None,
        frozen_instructions=frozen, agent_session="6c1d8b63-0000-4000-8000-000000000001",
        resume=resume, files_dir=SESSION_DIR, endpoint=endpoint,
        user_settings=ADAPTER.user_settings(args, probe or FakeProbe({}))))


def option(launch: LaunchPlan, name: str) -> list[str]:
    return [arg.partition("=")[2] for arg in launch.argv if arg.startswith(f"{name}=")]


def servers(launch: LaunchPlan) -> dict[str, dict[str, object]]:
    """The servers of the launch's one `--mcp-config`: a 0600 file of its own, never the
    JSON in argv."""
    [path] = option(launch, "--mcp-config")
    assert path == f"{SESSION_DIR}/{MCP_FILE}"
    [file] = [f for f in launch.files if f.path == path]
    assert file.mode == 0o600
    return dict(json.loads(file.text)["mcpServers"])


def settings(launch: LaunchPlan) -> dict[str, object]:
    [file] = [f for f in launch.files if f.path == OURS]
    assert file.mode == 0o600
    return dict(json.loads(file.text))


def test_it_is_registered() -> None:
    assert isinstance(ADAPTERS["qwen"], QwenAdapter)


def test_the_users_appended_texts_and_the_protocol_are_one_value() -> None:
    """Qwen crashes on two `--append-system-prompt`s: theirs (both forms) come first."""
    launch = plan("--append-system-prompt", "first", "--append-system-prompt=second",
                  "-p", "hi")
    [text] = option(launch, "--append-system-prompt")
    assert text == launch.instructions and text.startswith("first\n\nsecond\n\namux memory")
    assert "first" not in launch.argv and launch.argv[-2:] == ("-p", "hi")


def test_resume_passes_the_frozen_text_and_the_session_it_chose() -> None:
    first = plan("-p", "hi", "--append-system-prompt", "mine")
    again = plan("-p", "more", "--append-system-prompt", "other", resume=True,
                 frozen=first.instructions)
    assert option(again, "--append-system-prompt") == [first.instructions]
    assert first.argv[1:3] == ("--session-id", first.agent_session)
    assert again.argv[1:3] == ("--resume", first.agent_session)
    assert again.files == first.files and again.env == first.env
    assert len(again.warnings) == 1 and "'other'" in again.warnings[0]


def test_the_session_id_is_a_uuid_per_amux_session() -> None:
    ref = ADAPTER.new_session_ref("s1", SESSION_DIR)
    assert ref is not None and str(uuid.UUID(ref)) == ref
    assert ref == ADAPTER.new_session_ref("s1", "/elsewhere") != ADAPTER.new_session_ref(
        "s2", SESSION_DIR)


def test_the_amux_server_joins_the_users_own_mcp_config_in_one_flag() -> None:
    """Inline JSON and a file relative to the cwd (read as Qwen reads it), with or without
    `mcpServers`; ours is trusted (a headless run declines other calls) and always loaded."""
    probe = FakeProbe({"/work/project/mine.json": '{"mcpServers": {"git": {"command": "g"}},}'})
    inline = json.dumps({"web": {"command": "w"}})
    launch = plan("--mcp-config", "mine.json", f"--mcp-config={inline}", "-p", "x", probe=probe)
    found = servers(launch)
    assert found["git"] == {"command": "g"} and found["web"] == {"command": "w"}
    amux = found["amux"]
    assert amux["trust"] is True and amux["alwaysLoadTools"] is True
    assert amux["command"] == "/opt/amux/bin/amux" and amux["args"] == ["memory", "mcp"]
    assert "mine.json" not in launch.argv and inline not in " ".join(launch.argv[3:])
    assert [f.private for f in launch.files] == [False, True]  # the dry run withholds it
    assert not [f for f in plan("-p", "x").files if f.private]  # only amux's server
    # Without memory the user's flags pass as given.
    bare = plan("--mcp-config", "mine.json", "-p", "x", probe=probe, with_memory=False)
    assert bare.argv[3:] == ("--mcp-config", "mine.json", "-p", "x")


def test_a_long_inline_mcp_config_is_no_file_name() -> None:
    class LongNames(FakeProbe):
        def read_text(self, path: str) -> str | None:
            if len(path) > 255:
                raise OSError(36, "File name too long")
            return super().read_text(path)

    inline = json.dumps({"mcpServers": {"big": {"command": "b" * 400}}})
    assert "big" in servers(plan(f"--mcp-config={inline}", probe=LongNames({})))


def test_an_mcp_config_qwen_would_refuse_is_refused_naming_it() -> None:
    with pytest.raises(PlanRefused, match="--mcp-config 'not json'"):
        plan("--mcp-config", "not json")


def test_memory_is_off_in_the_launchs_system_settings_over_the_machines() -> None:
    machine = '// the admin\'s\n{"$version": 3, "memory": {"other": 1}, "model": {"name": "m"}}'
    launch = plan("-p", "x", probe=FakeProbe({"/etc/qwen-code/settings.json": machine}))
    assert settings(launch) == {"$version": 3, "model": {"name": "m"}, "memory": {
        "other": 1, "enableManagedAutoMemory": False, "enableManagedAutoDream": False}}
    assert launch.env.set == {"QWEN_CODE_SYSTEM_SETTINGS_PATH": OURS,
                          "QWEN_CODE_SYSTEM_DEFAULTS_PATH":
                          "/etc/qwen-code/system-defaults.json"}
    assert settings(plan())["$version"] == 4  # no machine file: nothing to migrate


def test_the_users_own_system_settings_and_defaults_paths_are_honoured() -> None:
    env = {"HOME": "/home/u", "QWEN_CODE_SYSTEM_SETTINGS_PATH": "/opt/q/settings.json"}
    files = {"/opt/q/settings.json": '{"context": {"fileName": "TEAM.md"}}'}
    launch = plan(probe=FakeProbe(files, env=env))
    assert settings(launch)["context"] == {"fileName": "TEAM.md"}
    assert launch.env.set["QWEN_CODE_SYSTEM_DEFAULTS_PATH"] == "/opt/q/system-defaults.json"
    theirs = plan(probe=FakeProbe(files, env={**env, "QWEN_CODE_SYSTEM_DEFAULTS_PATH": "/d"}))
    assert "QWEN_CODE_SYSTEM_DEFAULTS_PATH" not in theirs.env  # Qwen reads theirs itself


def test_broken_machine_settings_are_refused_naming_the_file() -> None:
    with pytest.raises(PlanRefused, match=r"/etc/qwen-code/settings\.json"):
        plan(probe=FakeProbe({"/etc/qwen-code/settings.json": "{oops"}))


@pytest.mark.parametrize("args", [("-r", "x"), ("--resume=x",), ("-c",), ("--continue",),
                                  ("--session-id", "x"), ("--fork-session",)])
def test_qwens_own_session_flags_are_refused(args: tuple[str, ...]) -> None:
    with pytest.raises(ResumeFlagRefused, match="amux run --resume"):
        plan(*args)


@pytest.mark.parametrize(("args", "kept"), [
    (("--chat-recording=false",), False), (("--chat-recording", "false", "-p", "x"), False),
    (("--no-chat-recording",), False), (("--chat-recording", "-p", "x"), True), ((), True)])
def test_without_chat_recording_nothing_can_be_resumed(args: tuple[str, ...],
                                                       kept: bool) -> None:
    for with_memory in (True, False):
        launch = plan(*args, with_memory=with_memory)
        assert (launch.not_resumable is None) is kept
        assert all(arg in launch.argv for arg in args)


def test_a_server_allow_list_without_amux_is_reported() -> None:
    [warning] = plan("--allowed-mcp-server-names", "git,web").warnings
    assert "leaves out the server `amux`" in warning
    assert not plan("--allowed-mcp-server-names=git,amux").warnings


@pytest.mark.parametrize(("api", "url", "key"), [
    ("openai", "OPENAI_BASE_URL", "OPENAI_API_KEY"),
    ("anthropic", "ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY"),
    ("gemini", "GOOGLE_GEMINI_BASE_URL", "GEMINI_API_KEY")])
def test_an_endpoint_selects_its_auth_type_and_names_its_key(api: str, url: str,
                                                            key: str) -> None:
    keyed = plan("-p", "x", endpoint=EndpointRequest("http://h/v1", "m", api, "MY_KEY"))  # type: ignore[arg-type]
    assert keyed.argv[1:5] == ("--auth-type", api, "--model", "m")
    assert keyed.env.set[url] == "http://h/v1" and keyed.env.copy == {key: "MY_KEY"}
    assert key not in keyed.env.set
    bare = plan("-p", "x", with_memory=False,
                endpoint=EndpointRequest("http://h/v1", "m", api))  # type: ignore[arg-type]
    assert bare.env.set == {url: "http://h/v1", key: NO_KEY}


def test_where_qwen_keeps_the_session() -> None:
    home = {"HOME": "/home/u"}
    assert ADAPTER.kept_session("id", home) == ("/home/u/.qwen/projects", "id.jsonl")
    assert ADAPTER.kept_session("id", {**home, "QWEN_HOME": "/q"}) == ("/q/projects",
                                                                         "id.jsonl")
    assert ADAPTER.kept_session("id", {**home, "QWEN_HOME": "/q", "QWEN_RUNTIME_DIR": "/r"}
                                ) == ("/r/projects", "id.jsonl")


def test_an_isolated_run_reads_only_the_targets_qwen() -> None:
    reset = ADAPTER.isolated_env("/home/t").shown()
    assert set(reset.values()) == {None}
    assert {"QWEN_HOME", "QWEN_RUNTIME_DIR", "QWEN_CODE_SYSTEM_SETTINGS_PATH",
            "QWEN_CODE_SYSTEM_DEFAULTS_PATH", "QWEN_CODE_TRUSTED_FOLDERS_PATH",
            "QWEN_CODE_MEMORY_BASE_DIR", "QWEN_CODE_MEMORY_LOCAL",
            "QWEN_CODE_MCP_APPROVALS_PATH"} == set(reset)


def test_hooks_read_nothing_of_the_users_instructions() -> None:
    probe = FakeProbe({"/home/u/.qwen/QWEN.md": "mine"})
    assert ADAPTER.user_instructions(("-p", "x"), probe) == ()  # Qwen reads its files itself
    assert probe.read == []


def test_version_and_headless_turn() -> None:
    assert ADAPTER.version(0, "0.24.4\n", "") == "0.24.4"
    assert ADAPTER.version(1, "", "boom") is None
    headless = ADAPTER.headless("/run/home", "/run/tmp")
    assert headless.args == ("-p", PROMPT, "--approval-mode", "auto-edit")
    assert headless.env.set["QWEN_HOME"] == "/run/home/.qwen" and headless.dirs == (
        "/run/home/.qwen",)
    assert not ADAPTER.starts_ui(("-p", "x")) and not ADAPTER.starts_ui(("a prompt",))
    assert ADAPTER.starts_ui(("--session-id", "x", "--auth-type", "openai", "--model", "m"))
