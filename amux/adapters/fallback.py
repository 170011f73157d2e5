"""Any other agent: launched unchanged, with an explicit "no memory capability" report.

No per-turn prompt injection, no wrappers: amux does not know this agent's
instruction channel or its native memory, so it promises nothing about either.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from amux.adapters.base import (
    NO_EXIT_MEANINGS,
    AgentRequest,
    Channel,
    EndpointApi,
    EndpointRefused,
    FirstRequest,
    Headless,
    LaunchPlan,
    ModelApi,
    NoTerminal,
    PlanRefused,
    Probe,
    Requirement,
    no_kept_session,
    no_quick_exit_cause,
    no_session_files,
    no_unpacked_code,
    no_user_settings,
)
from amux.adapters.registry import ADAPTERS
from amux.envpatch import EnvPatch


class FallbackAdapter:
    name = "fallback"
    display_name = "an agent amux has no adapter for"
    model_api: ModelApi = "chat"
    endpoint_paths: Mapping[EndpointApi, str] = {}
    prompt_args: tuple[str, ...] = ()
    without_terminal: NoTerminal = "fails"
    first_request: FirstRequest | None = None
    key_variables: tuple[str, ...] = ()
    instruction_files: tuple[str, ...] = ()
    mcp_tool_prefix: str | None = None
    channel: Channel = "none"
    tracks_sessions = False
    version_args: tuple[str, ...] | None = None
    probe_env = EnvPatch()
    requires: tuple[Requirement, ...] = ()
    exit_meanings: Mapping[int, str] = NO_EXIT_MEANINGS
    quick_exit_hint: str | None = None
    package: str | None = None

    def version(self, status: int, stdout: str, stderr: str) -> str | None:
        return None

    def isolated_env(self, home: str) -> EnvPatch:
        return EnvPatch()

    def user_instructions(self, args: tuple[str, ...], probe: Probe) -> tuple[str, ...]:
        return ()

    unpacked_code = no_unpacked_code
    session_files = no_session_files
    kept_session = no_kept_session
    user_settings = no_user_settings
    quick_exit_cause = no_quick_exit_cause

    def starts_ui(self, args: tuple[str, ...]) -> bool:
        return False  # amux cannot tell

    def new_session_ref(self, session_id: str, state_dir: str) -> str | None:
        return None

    def own_resume(self, ref: str) -> tuple[str, ...] | None:
        return None

    def headless(self, home: str, scratch: str) -> Headless:
        raise PlanRefused(f"amux has no adapter for this agent (adapters: {_known()})")

    def plan(self, request: AgentRequest) -> LaunchPlan:
        agent = os.path.basename(request.executable)
        if request.endpoint is not None:
            raise EndpointRefused(f"--endpoint: amux knows no way to point {agent} at an "
                                  f"endpoint (adapters: {_known()}); configure it in "
                                  f"{agent}'s own settings and launch it without --endpoint")
        return LaunchPlan((request.executable, *request.args), warnings=(
            f"no memory capability for {agent}: amux knows no adapter for it, so it "
            f"launches unchanged (adapters: {_known()})",))


def _known() -> str:
    return ", ".join(ADAPTERS)
