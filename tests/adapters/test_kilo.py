"""The Kilo Code CLI adapter's plan and hooks (no Kilo runs here; tests/e2e/test_kilo.py runs
the real one): OpenCode's plan under Kilo's names (`KILO_CONFIG_CONTENT`, its files), Kilo
Memory off through a mirror of the data directory, Kilo's own refusals, isolation."""

from __future__ import annotations

import json
from typing import Any

import pytest

from amux.adapters import ADAPTERS
from amux.adapters.base import (
    AgentRequest,
    EndpointRequest,
    FinishedRun,
    LaunchPlan,
    PlanMirror,
    PlanRefused,
    ResumeFlagRefused,
    SessionFile,
)
from amux.adapters.kilo import CONTENT, INSTRUCTIONS_FILE, PLUGIN_FILE, SESSION_FILE, TOOLS
from amux.adapters.opencode import OpenCodeAdapter
from amux.protocol.render import render
from tests.adapting import FakeProbe, memory

KILO = ADAPTERS["kilo"]
FILES = "/home/u/.local/share/amux/sessions/s"
SES = "ses_dbb8abd4fffeOrys2biUgeTGpA"


def plan(*args: str, with_memory: bool = True, env: dict[str, str] | None = None,
         agent_session: str | None = None, resume: bool = False,
         endpoint: EndpointRequest | None = None) -> LaunchPlan:
    """A launch as the launcher asks for it (a new session has no reference yet)."""
    return KILO.plan(AgentRequest(
        executable="/usr/bin/kilo", args=args,
        memory=memory("mcp") if with_memory else None, frozen_instructions=None,
        agent_session=agent_session, resume=resume, files_dir=FILES, endpoint=endpoint,
        user_settings=KILO.user_settings(args, FakeProbe({}, env={"HOME": "/home/u",
                                                                  **(env or {})}))))


def content(launch: LaunchPlan) -> dict[str, Any]:
    return dict(json.loads(launch.env.set[CONTENT]))


def test_it_is_opencodes_adapter_under_kilos_names() -> None:
    assert isinstance(KILO, OpenCodeAdapter) and KILO.name == "kilo"
    assert KILO.package == "@kilocode/cli" and KILO.channel == "mcp"
    launch = plan("run", "hello")
    config = content(launch)
    assert config["instructions"] == [f"{FILES}/{INSTRUCTIONS_FILE}"]
    assert config["mcp"]["amux"]["command"] == list(memory("mcp").mcp_command)
    assert config["permission"] == dict.fromkeys(TOOLS, "allow")
    assert config["plugin"] == [f"{FILES}/{PLUGIN_FILE}"]
    assert "OPENCODE_CONFIG_CONTENT" not in launch.env.set
    [protocol] = [f for f in launch.files if f.path.endswith(INSTRUCTIONS_FILE)]
    assert protocol.text == render("mcp") == launch.instructions
    [plugin] = [f for f in launch.files if f.path.endswith(PLUGIN_FILE)]
    assert json.dumps(f"{FILES}/{SESSION_FILE}") in plugin.text


def test_kilo_memory_is_off_through_a_mirror_of_the_data_directory() -> None:
    """The user's data directory (XDG_DATA_HOME, else ~/.local/share) lent entry by entry
    but `kilo/memory`: Kilo finds no memory state for the project, which is memory off."""
    for env, source in (({}, "/home/u/.local/share"),
                        ({"XDG_DATA_HOME": "/data/u"}, "/data/u")):
        launch = plan("run", "hello", env=env)
        mirror = f"{FILES}/kilo-data"
        assert launch.env.set["XDG_DATA_HOME"] == mirror
        assert launch.suppression == {"env": {"XDG_DATA_HOME": mirror}}
        assert launch.mirrors == (PlanMirror(mirror, source, ("kilo",)),
                                  PlanMirror(f"{mirror}/kilo", f"{source}/kilo", ("memory",)))
    without = plan("run", "hello", with_memory=False)
    assert without.mirrors == () and "XDG_DATA_HOME" not in without.env.set


def test_the_users_own_config_content_is_the_base() -> None:
    theirs = {"instructions": ["/home/u/rules.md"], "permission": "ask",
              "mcp": {"mine": {"type": "local", "command": ["mine"]}}}
    config = content(plan("run", "hi", env={CONTENT: json.dumps(theirs)}))
    assert config["instructions"] == ["/home/u/rules.md", f"{FILES}/{INSTRUCTIONS_FILE}"]
    assert list(config["permission"]) == ["*", *TOOLS] and config["permission"]["*"] == "ask"
    assert set(config["mcp"]) == {"mine", "amux"}
    with pytest.raises(ValueError, match=CONTENT):
        plan("run", "hi", env={CONTENT: "[1, 2"})


@pytest.mark.parametrize("args", [("-c",), ("--session", SES), ("run", "-s", SES, "hi"),
                                  ("run", "--fork", "hi"), ("run", "--cloud-fork", "hi")])
def test_its_own_session_flags_are_refused(args: tuple[str, ...]) -> None:
    with pytest.raises(ResumeFlagRefused):
        plan(*args)


@pytest.mark.parametrize("args", [("attach", "http://127.0.0.1:4096"),
                                  ("run", "--attach", "http://h:1", "hi")])
def test_another_server_is_refused_with_memory_only(args: tuple[str, ...]) -> None:
    with pytest.raises(PlanRefused, match="kilo attach"):
        plan(*args)
    assert plan(*args, with_memory=False).argv[1:] == args


def test_resume_continues_the_session_where_each_form_takes_the_flag() -> None:
    assert plan("run", "hi", agent_session=SES, resume=True).argv[1:] == (
        "run", "--session", SES, "hi")
    assert plan(agent_session=SES, resume=True).argv[1:] == ("--session", SES)
    resumed = plan("run", "hi", agent_session=SES, resume=True)
    assert "plugin" not in content(resumed)  # the session is known already
    assert resumed.mirrors == plan("run", "hi").mirrors  # Kilo Memory off again


def test_the_session_the_plugin_recorded_is_picked() -> None:
    spec = KILO.session_files({}, FILES)
    assert spec is not None and spec.pattern == SESSION_FILE
    run = FinishedRun(("/usr/bin/kilo", "run", "hi"), "/w", 1.0, 2.0, True,
                      (SessionFile(f"{FILES}/{SESSION_FILE}", SES, False),))
    assert spec.pick(run) == (SES, None)
    none, why = spec.pick(run._replace(files=()))
    assert none is None and why is not None and why.startswith("Kilo Code CLI started no")


def test_an_isolated_run_reads_only_the_targets_kilo() -> None:
    env = KILO.isolated_env("/home/t").shown()
    assert env["XDG_DATA_HOME"] == "/home/t/.local/share"
    assert env["XDG_CONFIG_HOME"] == "/home/t/.config"
    removed = {name for name, value in env.items() if value is None}
    assert {"KILO_CONFIG", "KILO_CONFIG_DIR", "KILO_CONFIG_CONTENT", "KILO_DB",
            "KILO_AUTH_CONTENT", "KILO_API_KEY", "KILO_SERVER_PASSWORD"} <= removed
    assert not any(name.startswith("OPENCODE_") for name in removed)


def test_which_starts_need_a_terminal() -> None:
    for args in ((), ("/some/project",), ("--model", "m/x"), ("attach", "http://h")):
        assert KILO.starts_ui(args), args
    for args in (("run", "hi"), ("serve",), ("daemon", "status"), ("--help",), ("-v",)):
        assert not KILO.starts_ui(args), args


def test_its_version_and_hint() -> None:
    assert KILO.version(0, "7.7.7\n", "") == "7.7.7"
    assert KILO.quick_exit_hint is not None and "kilo auth login" in KILO.quick_exit_hint
    headless = KILO.headless("/run/home", "/run/tmp")
    assert headless.env.set["KILO_TELEMETRY_LEVEL"] == "off"
    assert headless.env.set["XDG_DATA_HOME"] == "/run/home/.local/share"
