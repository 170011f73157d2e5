"""Codex (`codex`): protocol merged into `developer_instructions`, tools over MCP.

Everything goes in as `-c key=value` overrides for this launch only, before the
subcommand (Codex reads them as TOML values); the user's config.toml is never
edited.

- The effective developer instructions the user set (a `-c developer_instructions=…`
  in their arguments, else their profile's or config.toml's, read by
  `user_instructions`) come first, unchanged, then the protocol, in one
  `developer_instructions`. Codex's own base instructions stay.
- `features.memories`, `memories.use_memories` and `memories.generate_memories`
  are forced false.
- MCP server `amux` with `default_tools_approval_mode = "approve"`, so memory
  calls are not refused for want of an approval prompt.
- Resume is Codex's own `resume` (`codex exec resume ID …` for `exec`); the
  agent's session id is learned after the first run.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

from amux.adapters.base import (
    AgentRequest,
    Channel,
    LaunchPlan,
    Probe,
    ResumeFlagRefused,
    merge_instructions,
)

MEMORY_SETTINGS = ("features.memories", "memories.use_memories", "memories.generate_memories")
"""Codex's native-memory settings; every launch forces them false (so does the app-server
driver, which also checks `config/read` reports them so)."""
SUPPRESSION = tuple(f"{key}=false" for key in MEMORY_SETTINGS)


if TYPE_CHECKING:
    import tomlkit.items


def toml_value(value: object) -> str:
    """`value` as the TOML that `-c key=VALUE` expects."""
    import tomlkit  # imported when used: `amux run` of other agents does not pay for it

    return str(tomlkit.item(value).as_string()).strip()


def _take_overrides(args: tuple[str, ...], key: str) -> tuple[list[str], list[str]]:
    """(args without `-c KEY=…`, the raw TOML values given for KEY)."""
    rest: list[str] = []
    values: list[str] = []
    index = 0
    while index < len(args):
        arg = args[index]
        pair = None
        if arg in ("-c", "--config") and index + 1 < len(args):
            pair = args[index + 1]
        elif arg.startswith("--config="):
            pair = arg.removeprefix("--config=")
        if pair is not None and pair.partition("=")[0].strip() == key:
            values.append(pair.partition("=")[2])
            index += 2 if not arg.startswith("--config=") else 1
            continue
        rest.append(arg)
        index += 1
    return rest, values


def parse_toml_value(raw: str) -> str:
    """A `-c` value as Codex reads it: TOML if it parses, else the literal string."""
    import tomlkit

    try:
        value = tomlkit.parse(f"v = {raw}")["v"]
    except Exception:  # Codex falls back to the raw string too
        return raw
    return str(value)


def codex_home(env: Mapping[str, str]) -> str:
    """`$CODEX_HOME`, else `~/.codex`."""
    explicit = env.get("CODEX_HOME")
    return explicit or os.path.join(os.path.expanduser(env.get("HOME", "~")), ".codex")


def _profile(args: tuple[str, ...]) -> str | None:
    for index, arg in enumerate(args):
        if arg in ("--profile", "-p") and index + 1 < len(args):
            return args[index + 1]
        if arg.startswith("--profile="):
            return arg.partition("=")[2]
    return None


def _instructions_in(probe: Probe, path: str) -> str | None:
    import tomlkit  # only for Codex launches

    try:
        text = probe.read_text(path)
        if text is None:
            return None
        config = tomlkit.parse(text).unwrap()
    except (OSError, ValueError) as exc:
        raise ValueError(f"cannot read Codex's {path}: {exc}") from None
    value = config.get("developer_instructions")
    return value if isinstance(value, str) else None


class CodexAdapter:
    name = "codex"
    channel: Channel = "mcp"

    def user_instructions(self, args: tuple[str, ...], probe: Probe) -> tuple[str, ...]:
        """The `developer_instructions` Codex would use without us.

        `--profile NAME` layers `$CODEX_HOME/NAME.config.toml` over config.toml (Codex
        0.171's profiles), so the profile's value wins. A `-c developer_instructions=…`
        in `args` wins over both; `plan` handles that one, since it must also take it
        out of the arguments. Trusted projects' `.codex/config.toml` layers are not
        read yet (docs/launcher.md).
        """
        home = codex_home(probe.env)
        profile = _profile(args)
        chosen = None
        if profile:
            chosen = _instructions_in(probe, os.path.join(home, f"{profile}.config.toml"))
        if chosen is None:
            chosen = _instructions_in(probe, os.path.join(home, "config.toml"))
        return () if chosen is None else (chosen,)

    def new_session_ref(self, session_id: str, state_dir: str) -> str | None:
        return None  # Codex names its threads; the launcher learns the id after the run

    def plan(self, request: AgentRequest) -> LaunchPlan:
        positional = [arg for arg in request.args if not arg.startswith("-")]
        if positional[:1] == ["resume"] or positional[:2] == ["exec", "resume"]:
            raise ResumeFlagRefused(
                "`codex resume` would resume a Codex session behind amux's back (its frozen "
                "memory binding and protocol would be lost); use "
                "`amux run --resume AMUX_SESSION_ID` (see `amux sessions list`)")
        memory = request.memory
        if memory is None:
            return LaunchPlan([request.executable, *self._resume(request, list(request.args))],
                              agent_session=request.agent_session)
        args, given = _take_overrides(request.args, "developer_instructions")
        user = [parse_toml_value(given[-1])] if given else list(request.user_instructions)
        instructions = request.frozen_instructions or merge_instructions(user, memory.protocol)
        overrides = [
            f"developer_instructions={toml_value(instructions)}",
            *SUPPRESSION,
            f"mcp_servers.amux.command={toml_value(memory.mcp_command[0])}",
            f"mcp_servers.amux.args={toml_value(list(memory.mcp_command[1:]))}",
            f"mcp_servers.amux.env={toml_value(_inline(memory.env))}",
            'mcp_servers.amux.default_tools_approval_mode="approve"',
        ]
        argv = [request.executable, *(part for o in overrides for part in ("-c", o)),
                *self._resume(request, args)]
        return LaunchPlan(argv, channel="mcp", instructions=instructions,
                          suppression={"config": list(SUPPRESSION)},
                          agent_session=request.agent_session)

    @staticmethod
    def _resume(request: AgentRequest, args: list[str]) -> list[str]:
        if not request.resume or request.agent_session is None:
            return args
        if args[:1] == ["exec"]:
            return ["exec", "resume", request.agent_session, *args[1:]]
        return ["resume", request.agent_session, *args]


def _inline(env: dict[str, str]) -> tomlkit.items.InlineTable:
    import tomlkit

    table = tomlkit.inline_table()
    table.update(dict(sorted(env.items())))
    return table
