"""Pi (`pi`): the CLI protocol through `--append-system-prompt`, memory through bash.

Pi has no MCP and no built-in long-term memory (third-party memory extensions are
not evaluated), so nothing is suppressed: the protocol names `amux memory …`
commands and the launcher puts a directory holding only `amux` first on PATH,
with the connection in the environment. The user's own `--append-system-prompt`
texts come first, merged into one. Sessions: `--session FILE` chosen up front,
the same file to resume; the user's own `--session`, `--continue`, `--resume`
and `--no-session` are refused.
"""

from __future__ import annotations

import os

from amux.adapters.base import (
    AgentRequest,
    Channel,
    LaunchPlan,
    Probe,
    merge_instructions,
    refuse,
    take_option,
)


class PiAdapter:
    name = "pi"
    channel: Channel = "cli"

    def user_instructions(self, args: tuple[str, ...], probe: Probe) -> tuple[str, ...]:
        return ()

    def new_session_ref(self, session_id: str, state_dir: str) -> str | None:
        return os.path.join(state_dir, "pi-session.jsonl")

    def plan(self, request: AgentRequest) -> LaunchPlan:
        refuse(request.args, ("--session", "--continue", "-c", "--resume", "-r",
                              "--no-session", "--session-dir"), "Pi")
        session = ["--session", request.agent_session] if request.agent_session else []
        memory = request.memory
        if memory is None:
            return LaunchPlan([request.executable, *session, *request.args],
                              agent_session=request.agent_session)
        args, appended = take_option(request.args, ("--append-system-prompt",))
        instructions = request.frozen_instructions or merge_instructions(
            appended, memory.protocol)
        argv = [request.executable, *session, "--append-system-prompt", instructions or "",
                *args]
        return LaunchPlan(argv, env=dict(memory.env), path=[memory.bin_dir], channel="cli",
                          instructions=instructions, agent_session=request.agent_session)
