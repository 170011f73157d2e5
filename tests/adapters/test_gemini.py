"""The Gemini CLI adapter's plan: a mirror of Gemini's home with the user's settings plus
amux's, the user's global context file plus the protocol, a policy of this launch, and
Gemini's own session flags."""

from __future__ import annotations

import json
import re
import tomllib

import pytest

from amux.adapters import ADAPTERS
from amux.adapters.base import (
    AgentRequest,
    EndpointRefused,
    EndpointRequest,
    LaunchPlan,
    PlanRefused,
    ResumeFlagRefused,
)
from amux.adapters.gemini import GeminiAdapter
from tests.adapting import FakeProbe, memory

SESSION_DIR = "/home/u/.local/share/amux/sessions/s"
MIRROR = f"{SESSION_DIR}/gemini-home"
USER_SETTINGS = """{
  // the user's own
  "mcpServers": {"mine": {"command": "mine-mcp"}},
  "experimental": {"other": true},
  "context": {"fileName": ["AGENTS.md", "GEMINI.md"]},
}"""


def plan(args: tuple[str, ...] = ("-p", "hi"), *, settings: str | None = USER_SETTINGS,
         env: dict[str, str] | None = None, with_memory: bool = True, resume: bool = False,
         endpoint: EndpointRequest | None = None) -> LaunchPlan:
    adapter = GeminiAdapter()
    files = {} if settings is None else {"/home/u/.gemini/settings.json": settings}
    probe = FakeProbe({**files, "/home/u/.gemini/AGENTS.md": "Mine."}, env=env)
    return adapter.plan(AgentRequest(
        executable="/usr/bin/gemini", args=args,
        memory=memory("mcp") if with_memory else None,
        user_instructions=() if resume else adapter.user_instructions(args, probe),
        agent_session=adapter.new_session_ref("s", SESSION_DIR), resume=resume,
        files_dir=SESSION_DIR, endpoint=endpoint,
        user_settings=adapter.user_settings(args, probe)))


def file(launch: LaunchPlan, path: str) -> str:
    [text] = [each.text for each in launch.files if each.path == path]
    return text


def test_the_users_settings_get_the_amux_server_and_auto_memory_off() -> None:
    launch = plan()
    settings = json.loads(file(launch, f"{MIRROR}/.gemini/settings.json"))
    assert list(settings["mcpServers"]) == ["mine", "amux"]
    assert settings["mcpServers"]["amux"] == {
        "command": "/opt/amux/bin/amux", "args": ["memory", "mcp"],
        "env": dict(memory("mcp").env)}
    assert settings["experimental"] == {"other": True, "autoMemory": False}
    assert settings["context"] == {"fileName": ["AGENTS.md", "GEMINI.md"]}
    assert launch.env.set["GEMINI_CLI_HOME"] == MIRROR
    trusted = launch.env.set["GEMINI_CLI_TRUSTED_FOLDERS_PATH"]
    assert trusted == "/home/u/.gemini/trustedFolders.json"
    assert [tuple(m) for m in launch.mirrors] == [
        (MIRROR, "/home/u", (".gemini",)),
        (f"{MIRROR}/.gemini", "/home/u/.gemini", ("settings.json", "AGENTS.md"))]


def test_the_protocol_follows_the_users_first_global_context_file() -> None:
    launch = plan()
    text = file(launch, f"{MIRROR}/.gemini/AGENTS.md")
    assert text == launch.instructions
    assert text.startswith("Mine.\n\namux memory protocol v")
    assert plan(settings=None).files[1].path == f"{MIRROR}/.gemini/GEMINI.md"


@pytest.mark.parametrize(("path", "denied"), [
    ("/w/GEMINI.md", True), ("/w/sub/AGENTS.md", True),
    (f"{MIRROR}/.gemini/AGENTS.md", True), ("GEMINI.md", True), ("./AGENTS.md", True),
    ("sub/../GEMINI.md", True), ("../w/AGENTS.md", True),
    ("/home/u/.gemini/tmp/w/memory/MEMORY.md", True),
    ("/w/notes.md", False), ("/w/GEMINI.md.bak", False), ("/w/MYGEMINI.md", False),
])
def test_the_policy_denies_writes_to_geminis_own_memory_files(path: str, denied: bool) -> None:
    launch = plan()
    policy = tomllib.loads(file(launch, f"{SESSION_DIR}/gemini-policy.toml"))
    allow, *deny = policy["rule"]
    assert allow == {"mcpName": "amux", "toolName": "*", "decision": "allow", "priority": 900}
    assert sorted(rule["toolName"] for rule in deny) == ["replace", "write_file"]
    args = json.dumps({"file_path": path, "content": "x"}, separators=(",", ":"))
    assert all(bool(re.search(rule["argsPattern"], args)) is denied for rule in deny)
    # Gemini 0.61.0 drops a rule whose pattern its ReDoS heuristic calls unsafe
    # (isSafeRegExp: a group with a quantifier inside, quantified itself).
    assert not any(re.search(r"\([^)]*[*+?{].*\)[*+?{]", rule["argsPattern"]) for rule in deny)
    assert launch.argv[3:5] == ("--policy", f"{SESSION_DIR}/gemini-policy.toml")


def test_sessions_are_chosen_up_front_and_resumed() -> None:
    first, again = plan(), plan(resume=True)
    ref = GeminiAdapter().new_session_ref("s", SESSION_DIR)
    assert ref is not None and len(ref) == 36
    assert first.argv[1:3] == ("--session-id", ref) and first.agent_session == ref
    assert again.argv[1:3] == ("--resume", ref)
    assert first.warnings and not again.warnings  # the limit, said once per session


@pytest.mark.parametrize("flag", ["--resume", "-r", "--session-id", "--session-file",
                                  "--delete-session"])
def test_its_own_session_flags_are_refused(flag: str) -> None:
    with pytest.raises(ResumeFlagRefused, match="amux run --resume"):
        plan((flag, "x", "-p", "hi"))


def test_unreadable_settings_name_the_file() -> None:
    with pytest.raises(ValueError, match=r"/home/u/\.gemini/settings\.json"):
        plan(settings="{ not json")
    with pytest.raises(ValueError, match="not a JSON object"):
        plan(settings="[1]")  # from the hook, for a new session
    with pytest.raises(PlanRefused, match="not a JSON object"):
        plan(settings="[1]", resume=True)  # from the plan, on resume


def test_a_gemini_home_and_trusted_folders_of_the_users_own_are_kept() -> None:
    launch = plan(settings=None, env={"HOME": "/home/u", "GEMINI_CLI_HOME": "/data/g",
                                      "GEMINI_CLI_TRUSTED_FOLDERS_PATH": "/data/t.json"})
    assert launch.mirrors[1].source == "/data/g/.gemini"
    assert "GEMINI_CLI_TRUSTED_FOLDERS_PATH" not in launch.env.set


def test_without_memory_nothing_is_mirrored() -> None:
    launch = plan(with_memory=False)
    assert launch.env.set == {} and launch.mirrors == () and launch.files == ()
    assert launch.argv[1] == "--session-id"


def test_an_endpoint_is_the_gemini_api_with_api_key_auth() -> None:
    endpoint = EndpointRequest("http://127.0.0.1:9/", "gemma", None, "MY_KEY")
    for with_memory in (True, False):
        launch = plan(with_memory=with_memory, endpoint=endpoint)
        assert launch.env.set["GOOGLE_GEMINI_BASE_URL"] == "http://127.0.0.1:9/"
        assert launch.env.copy == {"GEMINI_API_KEY": "MY_KEY"}
        assert "GEMINI_API_KEY" not in launch.env.set and "GOOGLE_API_KEY" in launch.env.unset
        assert launch.argv[1:3] == ("--model", "gemma")
        settings = json.loads(file(launch, f"{MIRROR}/.gemini/settings.json"))
        assert settings["security"]["auth"]["selectedType"] == "gemini-api-key"
    assert plan(endpoint=endpoint._replace(key_env=None)).env.set["GEMINI_API_KEY"]
    with pytest.raises(EndpointRefused, match="Gemini API"):
        plan(endpoint=endpoint._replace(api="openai"))


def test_isolated_runs_read_the_targets_own_gemini() -> None:
    assert ADAPTERS["gemini"].isolated_env("/home/t").shown() == {
        "GEMINI_CLI_HOME": None, "GEMINI_CLI_TRUSTED_FOLDERS_PATH": None,
        "GEMINI_CLI_SYSTEM_SETTINGS_PATH": None}
