"""OpenCode (`opencode`): everything per launch in one variable, `OPENCODE_CONFIG_CONTENT`.

OpenCode 1.18.33 has no per-launch flag for instructions or MCP servers; its last
config layer is inline JSONC in `OPENCODE_CONFIG_CONTENT`, merged over the user's
global, project and `.opencode/` layers (docs/agent-findings-opencode.md §2–§3). amux
puts there, for this launch only:

- `instructions: [<session dir>/opencode-instructions.md]`: the protocol, in a file
  rewritten from the frozen text before every launch (OpenCode names the file's path in
  the system message, so it keeps its path for the life of the session). OpenCode
  concatenates `instructions` across layers and reads the user's AGENTS.md/CLAUDE.md and
  instruction files itself, before this one: amux reads none of them;
- `mcp.amux`: `amux memory mcp` as a local server, its environment only the connection
  config's path (never a token: this variable is in the process's environment);
- `permission`: the five exact tool names `allow`, added after the user's rules, so a
  user's `"*": "ask"` (an ask is rejected in `opencode run`) does not block them;
- `plugin: [<session dir>/opencode-session.js]` for a new session: OpenCode names its
  sessions and no flag chooses one, so a local plugin writes the id of the first
  top-level session (`session.created` without `parentID`) to `<session dir>/opencode-session`,
  which the launcher's session watch hands to `pick_session`.

A user's own `OPENCODE_CONFIG_CONTENT` (the `user_settings` hook reads it at every
launch) is the base: amux's keys are merged into it the way OpenCode merges two layers
(objects key by key, a new key last; `instructions` and `plugin` concatenated; a
`permission` string is `{"*": it}` first). OpenCode has no built-in long-term memory, so
nothing is suppressed. Resume is `--session ID` (after `run` for `opencode run`, else
right after the executable for the TUI); the user's `-c/--continue`, `-s/--session` and
`--fork` are refused, and with memory `--attach` and `opencode attach` too (the prompt
would run on another server, with that server's config). No ephemeral mode exists.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping

from amux.adapters import jsonc
from amux.adapters.base import (
    ENDPOINT_PROVIDER,
    MEMORY_TOOLS,
    NO_EXIT_MEANINGS,
    NO_KEY,
    NOT_RESUMABLE,
    NOTHING,
    PROMPT,
    AgentRequest,
    Channel,
    EndpointApi,
    EndpointRequest,
    FinishedRun,
    FirstRequest,
    Headless,
    LaunchPlan,
    ModelApi,
    NoTerminal,
    PlanFile,
    PlanRefused,
    Probe,
    RequestSize,
    Requirement,
    SessionFiles,
    endpoint_api,
    first_line_version,
    first_operand,
    has_flag,
    no_kept_session,
    no_quick_exit_cause,
    no_unpacked_code,
    refuse,
)
from amux.envpatch import EnvPatch

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

CONTENT = "OPENCODE_CONFIG_CONTENT"
INSTRUCTIONS_FILE = "opencode-instructions.md"
PLUGIN_FILE = "opencode-session.js"
SESSION_FILE = "opencode-session"
"""What the plugin writes: the OpenCode session id, in the amux session's own directory."""
TOOLS = tuple(f"amux_{tool}" for tool in MEMORY_TOOLS)
"""The memory tools as OpenCode names them (`<server>_<tool>`)."""
NO_MODELS_FETCH = "OPENCODE_DISABLE_MODELS_FETCH"
_LAUNCHER_ONLY = ("OPENCODE_CONFIG", "OPENCODE_CONFIG_DIR", "OPENCODE_CONFIG_CONTENT",
                  "OPENCODE_DB", "OPENCODE_TUI_CONFIG", "OPENCODE_PERMISSION",
                  "OPENCODE_AUTH_CONTENT", "OPENCODE_SERVER_PASSWORD",
                  "OPENCODE_SERVER_USERNAME")
"""The launching service's own OpenCode config, database and credentials: never an
isolated run's (amux sets its own `OPENCODE_CONFIG_CONTENT`)."""
_CONCATENATED = ("instructions", "plugin")
"""Config keys OpenCode concatenates across layers instead of replacing."""
_VALUE_OPTIONS = frozenset({"--log-level", "--port", "--hostname", "--mdns-domain", "--cors",
                            "-m", "--model", "--prompt", "--agent", "--replay-limit"})
"""OpenCode 1.18.33's top-level options that take a value (`opencode --help`)."""
_SESSION_ID = re.compile(r"ses_[0-9A-Za-z]{20,40}")
_NPM = {"openai": "@ai-sdk/openai-compatible", "anthropic": "@ai-sdk/anthropic"}
"""The AI SDK provider packages bundled in the binary, by API kind."""
ENDPOINT_PATHS: Mapping[EndpointApi, str] = {"openai": "/v1", "anthropic": "/v1"}
"""The provider's `baseURL` is the API's `/v1` for both: the AI SDK adds `/chat/completions`
or `/messages`."""
_NOT_UI = frozenset({"completion", "acp", "mcp", "run", "debug", "providers", "auth", "agent",
                     "upgrade", "uninstall", "serve", "web", "models", "stats", "export",
                     "import", "github", "session", "plugin", "plug", "db"})
"""OpenCode 1.18.33's subcommands that start no UI (`opencode --help`); anything else in
their place is the UI's project directory, or a UI of its own (`attach`, `pr`)."""
_INFO = frozenset({"-h", "--help", "-v", "--version"})

_PLUGIN = """\
// amux: records the id of the OpenCode session this launch starts (written by amux, for
// this amux session only)
import {{ writeFileSync }} from "node:fs";
export const AmuxSession = async () => ({{
  event: async ({{ event }}) => {{
    if (event.type === "session.created" && !event.properties.info.parentID) {{
      try {{ writeFileSync({path}, event.properties.info.id, {{ flag: "wx" }}); }} catch {{}}
    }}
  }},
}});
"""
"""Only the first top-level session counts (`wx`: a later `/new` or a sub-agent's does not)."""


def xdg_dirs(home: str) -> dict[str, str]:
    """The XDG base directories of a user whose home is `home`, each at its default:
    where OpenCode keeps its config, database, cache and state for that user."""
    return {"XDG_CONFIG_HOME": os.path.join(home, ".config"),
            "XDG_DATA_HOME": os.path.join(home, ".local", "share"),
            "XDG_CACHE_HOME": os.path.join(home, ".cache"),
            "XDG_STATE_HOME": os.path.join(home, ".local", "state")}


def user_config(value: str | None, variable: str = CONTENT,
                agent: str = "OpenCode") -> dict[str, Any]:
    """The user's own `OPENCODE_CONFIG_CONTENT` (or a fork's `variable`) as an object ({}
    when unset or empty, as OpenCode ignores it then); `ValueError` naming the variable
    when it is no JSONC object."""
    if not value:
        return {}
    return jsonc.load_object(value, variable, f"fix or unset it ({agent} would refuse it too)")


def merge(user: Mapping[str, Any], ours: Mapping[str, Any]) -> dict[str, Any]:
    """`ours` merged into the user's config as OpenCode merges a later layer (see module)."""
    merged = dict(user)
    for key, value in ours.items():
        theirs = merged.get(key)
        if key == "permission" and isinstance(theirs, str):
            theirs = {"*": theirs}
        if key in _CONCATENATED and isinstance(theirs, list):
            merged[key] = list(dict.fromkeys([*theirs, *value]))
        elif isinstance(value, dict) and isinstance(theirs, dict):
            merged[key] = merge(theirs, value)
        else:
            merged[key] = value
    return merged


def _endpoint(endpoint: EndpointRequest, agent: str) -> dict[str, Any]:
    """A provider of this launch only, every model OpenCode picks (titles too) its model;
    the key as OpenCode's own `{env:VAR}` reference, so its value is in no config text."""
    api = endpoint_api(endpoint, agent, ENDPOINT_PATHS,
                       "an OpenAI-compatible (Chat Completions) or Anthropic endpoint")
    model = f"{ENDPOINT_PROVIDER}/{endpoint.model}"
    key = f"{{env:{endpoint.key_env}}}" if endpoint.key_env else NO_KEY
    return {"provider": {ENDPOINT_PROVIDER: {
        "npm": _NPM[api], "name": "amux run --endpoint",
        "options": {"baseURL": endpoint.url, "apiKey": key},
        "models": {endpoint.model: {"name": endpoint.model}}}},
        "model": model, "small_model": model}


def pick_session(run: FinishedRun, agent: str = "OpenCode") -> tuple[str | None, str | None]:
    """(The id the plugin recorded for `run`, or None and a warning saying why)."""
    if not run.files:
        return None, (f"{agent} started no session in this run (no prompt was sent, or its "
                      "plugins were off: --pure)" + NOT_RESUMABLE)
    found = run.files[0].first_line.rstrip("\n")
    if len(run.files) == 1 and _SESSION_ID.fullmatch(found):
        return found, None
    return None, f"{agent}'s session file holds no session id ({found[:60]!r})" + NOT_RESUMABLE


class OpenCodeAdapter:
    """OpenCode's adapter; a fork of OpenCode that keeps its config format (Kilo) subclasses
    it and names its own variable, files, flags and native memory in the class attributes
    and the `native_memory_off` hook below."""

    name = "opencode"
    display_name = "OpenCode"
    config_variable = CONTENT
    instructions_file = INSTRUCTIONS_FILE
    plugin_file = PLUGIN_FILE
    session_file = SESSION_FILE
    tool_names = TOOLS
    models_fetch_variable = NO_MODELS_FETCH
    launcher_only: tuple[str, ...] = _LAUNCHER_ONLY
    value_options = _VALUE_OPTIONS
    not_ui = _NOT_UI
    session_flags: tuple[str, ...] = ("-c", "--continue", "-s", "--session", "--fork")
    """The agent's own ways to choose a session, refused: `amux run --resume` chooses."""
    model_api: ModelApi = "chat"
    endpoint_paths = ENDPOINT_PATHS
    prompt_args = ("run", PROMPT)
    without_terminal: NoTerminal = "hangs"
    """Its UI draws into the pipe and waits for keys that never come."""
    first_request: FirstRequest | None = FirstRequest(
        "1.18.33", memory=RequestSize(36119, 9030), plain=RequestSize(30815, 7704))
    key_variables: tuple[str, ...] = ("OPENAI_API_KEY",)
    instruction_files = ("AGENTS.md", "CLAUDE.md")
    mcp_tool_prefix: str | None = "amux_"
    channel: Channel = "mcp"
    tracks_sessions = True
    version_args: tuple[str, ...] | None = ("--version",)
    probe_env = EnvPatch()
    version = first_line_version
    requires = (
        Requirement("flag", "--session", "`amux run --resume` continues the OpenCode session "
                    "(the TUI)"),
        Requirement("flag", "--session", "`amux run --resume` continues the OpenCode session "
                    "(`opencode run`)", ("run", "--help")),
        Requirement("env", CONTENT, "the protocol, the memory tools and the session's plugin "
                    "reach OpenCode"),
        Requirement("setting", "instructions", "the memory protocol reaches OpenCode"),
        Requirement("setting", "environment", "the memory tools reach the Hub"),
        Requirement("setting", "permission", "the memory tools run under a user's ask rule"),
        Requirement("setting", "plugin", "the OpenCode session is learnt, so it can be "
                    "resumed"),
        Requirement("setting", "session.created", "the OpenCode session is learnt, so it can "
                    "be resumed"),
        Requirement("setting", "parentID", "a sub-agent's session is not taken for the "
                    "launch's"),
        *(Requirement("setting", name, "`amux run --endpoint` reaches OpenCode")
          for name in ("baseURL", "small_model", *_NPM.values())),
        Requirement("setting", "{env:", "`--endpoint-key-env` gives the endpoint its key "
                    "without putting it in the config"),
        Requirement("env", NO_MODELS_FETCH, "an `--endpoint` launch does not wait for the "
                    "models.dev catalogue (which knows no local model)"),
        *(Requirement("env", name, "an isolated run reads the target user's config and "
                      "data") for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME",
                                           "XDG_CACHE_HOME", "XDG_STATE_HOME")),
        *(Requirement("env", name, "an isolated run never gets the launching service's "
                      "OpenCode config, database or credentials (it is removed)")
          for name in _LAUNCHER_ONLY if name != CONTENT),
    )
    package: str | None = "opencode-ai"
    exit_meanings: Mapping[int, str] = NO_EXIT_MEANINGS
    quick_exit_hint = ("log in to a provider (`opencode providers login`; `opencode providers "
                       "list` shows them) and choose a model (`-m provider/model`), or point it "
                       "at a model server: `amux run --endpoint URL --model NAME opencode`")

    unpacked_code = no_unpacked_code
    quick_exit_cause = no_quick_exit_cause

    def starts_ui(self, args: tuple[str, ...]) -> bool:
        first = first_operand(args, self.value_options)
        return (first is None or args[first] not in self.not_ui) and not has_flag(args, _INFO)

    def user_instructions(self, args: tuple[str, ...], probe: Probe) -> tuple[str, ...]:
        return ()  # OpenCode reads AGENTS.md and every layer's `instructions` itself

    def user_settings(self, args: tuple[str, ...], probe: Probe) -> Mapping[str, str]:
        """The user's own `OPENCODE_CONFIG_CONTENT`, which amux's must merge into."""
        value = probe.env.get(self.config_variable)
        if not value:
            return NOTHING
        # a broken value fails now, naming the variable
        user_config(value, self.config_variable, self.display_name)
        return {self.config_variable: value}

    def isolated_env(self, home: str) -> EnvPatch:
        return EnvPatch(xdg_dirs(home), self.launcher_only)

    def own_resume(self, ref: str) -> tuple[str, ...] | None:
        return ("--session", ref)

    def new_session_ref(self, session_id: str, state_dir: str) -> str | None:
        return None  # OpenCode names its sessions; the plugin tells the launcher

    kept_session = no_kept_session

    def session_files(self, env: Mapping[str, str], state_dir: str) -> SessionFiles | None:
        return SessionFiles(state_dir, self.session_file, self._pick_session, held=False)

    def _pick_session(self, run: FinishedRun) -> tuple[str | None, str | None]:
        return pick_session(run, self.display_name)

    def native_memory_off(self, request: AgentRequest, plan: LaunchPlan) -> LaunchPlan:
        """`plan`, a launch with memory, with the agent's own long-term memory off for it
        (and the suppression recorded); OpenCode has none."""
        return plan

    def headless(self, home: str, scratch: str) -> Headless:
        """`opencode run …` (its default permissions allow edits; an `ask` would be
        rejected in `run`), every XDG directory under `home`, no update or model checks."""
        dirs = xdg_dirs(home)
        return Headless(("run", PROMPT), env=EnvPatch({
            **dirs, "OPENCODE_DISABLE_AUTOUPDATE": "1", "OPENCODE_DISABLE_MODELS_FETCH": "1"}),
                        dirs=tuple(dirs.values()))

    def plan(self, request: AgentRequest) -> LaunchPlan:
        refuse(request.args, self.session_flags, self.display_name)
        memory = request.memory
        first = first_operand(request.args, self.value_options)
        command = None if first is None else request.args[first]
        if memory is not None and (command == "attach" or any(
                arg.partition("=")[0] == "--attach" for arg in request.args)):
            raise PlanRefused(f"--attach (and `{self.name} attach`) would run on another "
                              f"{self.display_name} server, whose config and MCP servers are "
                              "not this launch's, so it would have no memory; start "
                              f"{self.display_name} through amux instead, or switch memory "
                              "off for it")
        try:
            user = user_config(request.user_settings.get(self.config_variable),
                               self.config_variable, self.display_name)
        except ValueError as problem:
            raise PlanRefused(str(problem)) from None
        ours: dict[str, Any] = {}
        files: list[PlanFile] = []
        instructions = None
        if memory is not None:
            instructions = request.frozen_instructions or memory.protocol
            path = self._file(request, self.instructions_file)
            files.append(PlanFile(path, instructions))
            ours["instructions"] = [path]
            ours["mcp"] = {"amux": {"type": "local", "command": list(memory.mcp_command),
                                    "environment": dict(memory.env)}}
            ours["permission"] = dict.fromkeys(self.tool_names, "allow")
        if request.agent_session is None and request.files_dir is not None:
            plugin = os.path.join(request.files_dir, self.plugin_file)
            target = json.dumps(os.path.join(request.files_dir, self.session_file))
            files.append(PlanFile(plugin, _PLUGIN.format(path=target)))
            ours["plugin"] = [plugin]
        env: dict[str, str] = {}
        if request.endpoint is not None:
            ours.update(_endpoint(request.endpoint, self.display_name))
            env[self.models_fetch_variable] = "1"
        if ours:
            env[self.config_variable] = json.dumps(merge(user, ours), ensure_ascii=False)
        args = list(request.args)
        if request.resume and request.agent_session is not None:
            at = first + 1 if command == "run" and first is not None else 0
            args[at:at] = ["--session", request.agent_session]
        launch = LaunchPlan((request.executable, *args), env=EnvPatch(env),
                            channel="none" if memory is None else "mcp",
                            instructions=instructions, files=tuple(files),
                            agent_session=request.agent_session)
        return launch if memory is None else self.native_memory_off(request, launch)

    def _file(self, request: AgentRequest, name: str) -> str:
        if request.files_dir is None:
            raise PlanRefused(f"{self.display_name}'s instructions need the session's "
                              "directory")
        return os.path.join(request.files_dir, name)
