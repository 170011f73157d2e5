"""Each adapter's `requires` is what its plans and hooks really use, derived from them (never
a copied list): every flag and variable a representative launch passes or sets is declared,
and everything declared is used by some launch."""

from __future__ import annotations

import pytest

from amux.adapters import ADAPTERS
from amux.adapters.base import EndpointRequest, LaunchPlan
from amux.adapters.fallback import FallbackAdapter
from tests.adapting import URL, USER_ARGS, FakeProbe, endpoint_plan, memory, plan

NAMES = sorted(ADAPTERS)


def launches(name: str, args: list[str]) -> list[LaunchPlan]:
    """New and resumed, with memory and without; pointed at an endpoint (`amux run
    --endpoint`), with a key and without, with a user and password in its URL; and a new
    session as the launcher starts it, with the reference the adapter chooses up front
    (None: one it learns after the run)."""
    endpoints = [EndpointRequest(URL, "m"), EndpointRequest(URL, "m", None, "MY_KEY"),
                 EndpointRequest(URL.replace("://", "://me:pw@"), "m")]
    if name == "claude":  # a bearer token is another variable
        endpoints.append(EndpointRequest(URL, "m", None, "ANTHROPIC_AUTH_TOKEN"))
    if name in ("opencode", "kilo"):  # another provider package
        endpoints.append(EndpointRequest(URL, "m", "anthropic"))
    if name in ("copilot", "cline"):  # another provider type (Copilot: without a wire API)
        endpoints.append(EndpointRequest(URL, "m", "anthropic"))
    if name == "qwen":  # another --auth-type, each with its own variables
        endpoints += [EndpointRequest(URL, "m", "anthropic"), EndpointRequest(URL, "m", "gemini")]
    return [plan(name, with_memory=with_memory, resume=resume, args=args)
            for with_memory in (True, False) for resume in (False, True)] + [
        endpoint_plan(name, endpoint, with_memory=with_memory, args=args)
        for endpoint in endpoints for with_memory in (True, False)] + [
        plan(name, args=args, agent_session=ADAPTERS[name].new_session_ref(
            "s", "/home/u/.local/share/amux/sessions/s"))] + [
        plan(name, with_memory=with_memory, resume=resume, args=args, version=version)
        for version in VERSIONS.get(name, ()) for with_memory in (True, False)
        for resume in (False, True)]


VERSIONS = {"pi": ("1.6.0",)}
"""The versions of an agent whose route depends on it (Pi's MCP route), besides unknown."""


def hook_commands(name: str, args: list[str]) -> list[tuple[str, ...]]:
    """The commands the adapter's hooks ask the agent (without the executable; not the
    other commands they run, such as git)."""
    executable = f"/usr/bin/{name}"
    probe = FakeProbe({}, executable=executable)
    ADAPTERS[name].user_instructions(tuple(args), probe)
    return [argv[1:] for argv, _ in probe.ran if argv[0] == executable]


def options(words: list[str]) -> set[str]:
    return {word.partition("=")[0] for word in words if word.startswith("-")}


def amux_env(name: str, launch: LaunchPlan) -> set[str]:
    """The variables a launch sets or removes for the agent itself (not amux's own
    connection, which only the `amux` client reads, nor a credential's variable, which
    amux names to the agent in its settings)."""
    own = {*memory(ADAPTERS[name].channel).env, *launch.env.secret,
           *(key for key in launch.env.set if key.startswith("AMUX_"))}  # amux's own, read
    # by amux's code in the agent (Pi's extension), never by the agent's
    return ({key for key in launch.env.set if key not in own} | set(launch.env.unset)
            | set(launch.env.copy))


def declared(name: str, kind: str) -> set[str]:
    return {req.name for req in ADAPTERS[name].requires if req.kind == kind}


@pytest.mark.parametrize("name", NAMES)
def test_every_flag_and_variable_a_launch_uses_is_declared(name: str) -> None:
    # With no user arguments, every word of the argv after the executable is amux's.
    words = [word for launch in launches(name, []) for word in launch.argv[1:]]
    words += [word for argv in hook_commands(name, []) for word in argv]
    assert options(words) <= declared(name, "flag")
    env = {key for launch in launches(name, []) for key in amux_env(name, launch)}
    assert env | ADAPTERS[name].isolated_env("/home/t").names() <= declared(name, "env")


@pytest.mark.parametrize("name", NAMES)
def test_everything_declared_is_used_by_some_launch(name: str) -> None:
    adapter = ADAPTERS[name]
    every = [launch for args in ([], USER_ARGS[name]) for launch in launches(name, args)]
    words = {word for launch in every for word in launch.argv[1:]}
    words |= {word for args in ([], USER_ARGS[name])
              for argv in hook_commands(name, args) for word in argv}
    assert declared(name, "flag") <= {word.partition("=")[0] for word in words}
    env = {key for launch in every for key in amux_env(name, launch)}
    assert declared(name, "env") <= env | adapter.isolated_env("/home/t").names()
    texts = words | {file.text for launch in every for file in launch.files}
    texts |= {value for launch in every for value in launch.env.set.values()}
    for setting in declared(name, "setting"):
        assert any(setting in text for text in texts), setting
    for requirement in adapter.requires:
        assert requirement.why and requirement.help_args


def test_the_fallback_relies_on_nothing() -> None:
    assert FallbackAdapter().requires == ()
