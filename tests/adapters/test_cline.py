"""The Cline adapter: the protocol as a rule file in a rules root of the launch's own (a
`OneDrive…` variable the user has not set), the user's MCP servers and amux's in a settings
file of the launch's own, Cline's own process (no background hub) whenever amux changes
anything, the session learnt from the file Cline writes, `--id` to resume, and its hooks
through the fake probe. The real CLI: tests/e2e/test_cline.py."""

from __future__ import annotations

import json

import pytest

from amux.adapters import ADAPTERS
from amux.adapters.base import (
    NO_KEY,
    PROMPT,
    AgentRequest,
    EndpointRefused,
    EndpointRequest,
    FinishedRun,
    LaunchPlan,
    PlanRefused,
    ResumeFlagRefused,
    SessionFile,
)
from amux.adapters.cline import (
    AUTO_APPROVE_OFF,
    DAEMON,
    MCP_FILE,
    PROVIDERS_FILE,
    RESUMES_IN_UI,
    RULE_FILE,
    RULES_DIR,
    ClineAdapter,
    pick_session,
)
from tests.adapting import FakeProbe, memory

SESSION_DIR = "/home/u/.local/share/amux/sessions/s"
USER_MCP = "/home/u/.cline/data/settings/cline_mcp_settings.json"
RULE = f"{SESSION_DIR}/{RULES_DIR}/Documents/Cline/Rules/{RULE_FILE}"
ADAPTER = ClineAdapter()


def plan(*args: str, probe: FakeProbe | None = None, resume: bool = False,
         frozen: str | None = None, with_memory: bool = True,
         endpoint: EndpointRequest | None = None,
         session: str | None = "1796444856348_prd43") -> LaunchPlan:
    return ADAPTER.plan(AgentRequest(
        executable="/usr/bin/cline", args=args, memory=memory("mcp") if with_memory else None,
        frozen_instructions=frozen, agent_session=session, resume=resume,
        files_dir=SESSION_DIR, endpoint=endpoint,
        user_settings=ADAPTER.user_settings(args, probe or FakeProbe({}))))


def servers(launch: LaunchPlan) -> dict[str, dict[str, object]]:
    path = launch.env.set["CLINE_MCP_SETTINGS_PATH"]
    assert path == f"{SESSION_DIR}/{MCP_FILE}"
    [file] = [f for f in launch.files if f.path == path]
    assert file.mode == 0o600
    return dict(json.loads(file.text)["mcpServers"])


def test_it_is_registered() -> None:
    assert isinstance(ADAPTERS["cline"], ClineAdapter)


def test_the_protocol_is_a_rule_file_in_a_rules_root_of_the_launchs_own() -> None:
    launch = plan("Say hello, please.")
    assert launch.argv == ("/usr/bin/cline", "Say hello, please.")
    assert launch.env.set == {"CLINE_SESSION_BACKEND_MODE": "local",
                              "CLINE_MCP_SETTINGS_PATH": f"{SESSION_DIR}/{MCP_FILE}",
                              "OneDriveCommercial": f"{SESSION_DIR}/{RULES_DIR}",
                              "CLINE_SANDBOX": "1",
                              "CLINE_SANDBOX_DATA_DIR": "/home/u/.cline/data"}
    [rule] = [f for f in launch.files if f.path == RULE]
    assert rule.text == launch.instructions and rule.text.startswith("amux memory protocol")
    assert not rule.private and launch.channel == "mcp"


def test_sandbox_mode_keeps_the_users_data_or_is_left_out_with_a_warning() -> None:
    """Cline's UI starts no background daemon in sandbox mode; its data directory is the
    user's own. A user's own value of what sandbox mode replaces, or an endpoint (whose
    provider file it would replace), keeps the launch out of it: a UI launch says why."""
    data = FakeProbe({}, env={"HOME": "/home/u", "CLINE_DATA_DIR": "/d"})
    assert plan("Hi there.", probe=data).env.set["CLINE_SANDBOX_DATA_DIR"] == "/d"
    theirs = FakeProbe({}, env={"HOME": "/home/u", "CLINE_SESSION_DATA_DIR": "/s"})
    assert "CLINE_SANDBOX" not in plan("Hi there.", probe=theirs).env.set
    assert not plan("Hi there.", probe=theirs).warnings
    assert plan(probe=theirs).warnings == (DAEMON,)  # the UI
    pointed = plan(endpoint=EndpointRequest("http://h/v1", "m"))
    assert "CLINE_SANDBOX" not in pointed.env.set and pointed.warnings == (DAEMON,)
    off = plan(endpoint=EndpointRequest("http://h/v1", "m"), with_memory=False)
    assert off.warnings == (DAEMON,)


def test_a_rules_root_variable_of_the_users_is_left_as_it_is() -> None:
    probe = FakeProbe({}, env={"HOME": "/home/u", "OneDriveCommercial": "/mnt/od"})
    launch = plan("Hi there.", probe=probe)
    assert "OneDriveCommercial" not in launch.env.set
    assert launch.env.set["OneDriveConsumer"] == f"{SESSION_DIR}/{RULES_DIR}"
    every = {"HOME": "/home/u", "OneDriveCommercial": "/a", "OneDriveConsumer": "/b",
             "OneDrive": "/c"}
    with pytest.raises(PlanRefused, match="unset one of them"):
        plan("Hi there.", probe=FakeProbe({}, env=every))


def test_the_amux_server_joins_the_users_own_servers() -> None:
    theirs = {"mcpServers": {"git": {"command": "git-mcp", "env": {"TOKEN": "t"}}}}
    launch = plan("Hi there.", probe=FakeProbe({USER_MCP: json.dumps(theirs)}))
    found = servers(launch)
    assert found["git"] == theirs["mcpServers"]["git"]
    assert found["amux"] == {"command": "/opt/amux/bin/amux", "args": ["memory", "mcp"],
                             "env": memory("mcp").env, "disabled": False}
    [file] = [f for f in launch.files if f.path.endswith(MCP_FILE)]
    assert file.private  # their token: the dry run names the file only
    named = FakeProbe({"/etc/cline/mcp.json": json.dumps(theirs)},
                      env={"HOME": "/home/u", "CLINE_MCP_SETTINGS_PATH": "/etc/cline/mcp.json"})
    assert "git" in servers(plan("Hi there.", probe=named))
    data = FakeProbe({"/d/settings/cline_mcp_settings.json": json.dumps(theirs)},
                     env={"HOME": "/home/u", "CLINE_DATA_DIR": "/d"})
    assert "git" in servers(plan("Hi there.", probe=data))


def test_mcp_settings_cline_would_refuse_are_refused_naming_the_file() -> None:
    with pytest.raises(PlanRefused, match=r"cline_mcp_settings\.json"):
        plan("Hi there.", probe=FakeProbe({USER_MCP: "{not json"}))


def test_resume_names_the_session_and_passes_the_frozen_text() -> None:
    first = plan("Remember this, please.", session=None)
    again = plan(resume=True, frozen=first.instructions)
    assert again.argv == ("/usr/bin/cline", "--id", "1796444856348_prd43")
    assert again.files == first.files and not again.warnings
    assert ADAPTER.starts_ui(again.argv[1:])
    prompted = plan("Still there?", resume=True, frozen=first.instructions)
    assert prompted.warnings and RESUMES_IN_UI in prompted.warnings[0]


@pytest.mark.parametrize("args", [("--id", "x"), ("--id=x",)])
def test_clines_own_resume_flag_is_refused(args: tuple[str, ...]) -> None:
    with pytest.raises(ResumeFlagRefused, match="amux run --resume"):
        plan(*args)


def test_auto_approval_turned_off_is_reported() -> None:
    assert plan("--auto-approve", "false", "Hi there.").warnings == (AUTO_APPROVE_OFF,)
    assert not plan("--auto-approve=true", "Hi there.").warnings


def test_without_memory_cline_is_as_it_is() -> None:
    launch = plan("Hi there.", with_memory=False)
    assert launch.argv == ("/usr/bin/cline", "Hi there.") and launch.env.set == {}
    assert launch.files == () and launch.instructions is None


@pytest.mark.parametrize(("api", "provider", "key"), [
    (None, "openai-compatible", "OPENAI_API_KEY"),
    ("anthropic", "anthropic", "ANTHROPIC_API_KEY")])
def test_an_endpoint_is_a_provider_file_of_the_launch(api: str | None, provider: str,
                                                     key: str) -> None:
    for with_memory in (True, False):
        launch = plan("Hi there.", with_memory=with_memory, endpoint=EndpointRequest(
            "http://127.0.0.1:8000/v1", "m", api))  # type: ignore[arg-type]
        path = f"{SESSION_DIR}/{PROVIDERS_FILE}"
        assert launch.env.set["CLINE_PROVIDER_SETTINGS_PATH"] == path
        assert launch.env.set["CLINE_SESSION_BACKEND_MODE"] == "local"
        assert launch.env.set[key] == NO_KEY
        [file] = [f for f in launch.files if f.path == path]
        settings = json.loads(file.text)
        assert settings["lastUsedProvider"] == provider
        entry = settings["providers"][provider]
        assert entry["updatedAt"] and "apiKey" not in entry["settings"]
        assert entry["settings"] == {"provider": provider, "model": "m",
                                     "baseUrl": "http://127.0.0.1:8000/v1"}
    named = plan("Hi there.", endpoint=EndpointRequest("http://h/v1", "m", None, "MY_KEY"))
    assert named.env.copy == {"OPENAI_API_KEY": "MY_KEY"}
    assert "OPENAI_API_KEY" not in named.env.set
    with pytest.raises(EndpointRefused, match="Cline cannot use such an endpoint"):
        plan("Hi there.", endpoint=EndpointRequest("http://h", "m", "gemini"))


def test_the_session_cline_wrote_is_picked() -> None:
    def run(*paths: str) -> FinishedRun:
        return FinishedRun(("cline", "x"), "/w", 0.0, 1.0, False,
                           tuple(SessionFile(path, "{", False) for path in paths))

    base = "/home/u/.cline/data/sessions"
    found = run(f"{base}/1_a/1_a.json", f"{base}/1_a/1_a.messages.json")
    assert pick_session(found) == ("1_a", None)
    none, why = pick_session(run())
    assert none is None and why and "cannot be resumed" in why
    two, why = pick_session(run(f"{base}/1_a/1_a.json", f"{base}/2_b/2_b.json"))
    assert two is None and why and "2 sessions" in why
    where = ADAPTER.session_files({"HOME": "/home/u"}, SESSION_DIR)
    assert where is not None and where.directory == base and not where.held
    other = ADAPTER.session_files({"HOME": "/home/u", "CLINE_DIR": "/c"}, SESSION_DIR)
    assert other is not None and other.directory == "/c/data/sessions"


def test_an_isolated_run_reads_only_the_targets_cline() -> None:
    reset = ADAPTER.isolated_env("/home/t")
    assert {"CLINE_DIR", "CLINE_DATA_DIR", "CLINE_MCP_SETTINGS_PATH",
            "CLINE_PROVIDER_SETTINGS_PATH", "CLINE_API_KEY"} <= set(reset.unset)
    assert reset.set == {}


def test_the_ui_is_what_starts_without_a_prompt() -> None:
    assert ADAPTER.starts_ui(()) and ADAPTER.starts_ui(("-i",))
    assert ADAPTER.starts_ui(("--id", "x", "Hi there."))
    assert not ADAPTER.starts_ui(("Hi there.",)) and not ADAPTER.starts_ui(("mcp", "list"))
    assert not ADAPTER.starts_ui(("-m", "model", "Hi there.")) and not ADAPTER.starts_ui(
        ("--version",))


def test_version_and_headless_turn() -> None:
    assert ADAPTER.version(0, "3.0.65\n", "") == "3.0.65"
    headless = ADAPTER.headless("/run/home", "/run/tmp")
    assert headless.args == (PROMPT,)
    assert headless.env.set["CLINE_DIR"] == "/run/home/.cline"
    assert headless.env.set["CLINE_SESSION_BACKEND_MODE"] == "local"
    assert ADAPTER.user_instructions(("x",), FakeProbe({})) == ()
    seen = ('\x1b[36m[amux__memory_search]\x1b[0m {"query":"tabs"}\n'
            '   \x1b[90m\u23bf \x1b[0m\x1b[2m{"content":[]}\x1b[0m\nYou indent with tabs.\n')
    assert headless.answer(seen) == "You indent with tabs."
    assert headless.answer("Just an answer.\n") == "Just an answer."
