"""Kilo Code CLI (`kilo`, npm `@kilocode/cli`): a fork of OpenCode, launched as OpenCode is.

Kilo 7.7.7 keeps OpenCode's config format and layers under its own names
(docs/agent-findings-kilo.md): the last layer is inline JSONC in `KILO_CONFIG_CONTENT`,
merged over `~/.config/kilo/kilo.json` (and `opencode.json`, `config.json`), the
project's `kilo.json` and `.kilo/`. So `OpenCodeAdapter` does the work: the protocol as one
more `instructions` file (after the user's AGENTS.md and their own `instructions`), the
memory tools as `mcp.amux` beside the user's servers, their five names `allow`ed, the
session-recording plugin, `--session ID` to resume and the endpoint's provider. What this
module adds is Kilo's own:

- Kilo Memory, off for a launch with memory. It is switched per project in
  `<data>/memory/<project>-<hash>/state.json` (`kilo serve` + `POST /memory/enable`, or the
  TUI's `/memory`), with no config key or variable; the launch leaves that file alone and
  turns off what it does: `permission` `deny` for `kilo_memory_save` and
  `kilo_memory_recall` (a denied tool is not declared to the model), and a local plugin
  (`experimental.chat.system.transform`) that drops the injected memory section (its
  preamble and its `kilo-memory-v1` blocks) from the system prompt. The user's setting
  stays, and a plain `kilo` launch still has it.
- `--cloud-fork` is refused with the session flags, `kilo attach` like `opencode attach`.
- The launching service's `KILO_*` config, database and credentials are not an isolated
  run's. No ephemeral mode exists (every session is kept).
"""

from __future__ import annotations

from collections.abc import Mapping

from amux.adapters.base import (
    MEMORY_TOOLS,
    PROMPT,
    AgentRequest,
    FirstRequest,
    Headless,
    PlanFile,
    PlanRefused,
    RequestSize,
    Requirement,
)
from amux.adapters.opencode import ENDPOINT_PATHS, OpenCodeAdapter, xdg_dirs
from amux.envpatch import EnvPatch

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

CONTENT = "KILO_CONFIG_CONTENT"
INSTRUCTIONS_FILE = "kilo-instructions.md"
PLUGIN_FILE = "kilo-session.js"
SESSION_FILE = "kilo-session"
MEMORY_OFF_FILE = "kilo-memory-off.js"
"""The plugin that drops Kilo Memory's section from the system prompt (module doc)."""
TOOLS = tuple(f"amux_{tool}" for tool in MEMORY_TOOLS)
"""The memory tools as Kilo names them (`<server>_<tool>`, as OpenCode does)."""
NATIVE_TOOLS = ("kilo_memory_save", "kilo_memory_recall")
"""Kilo Memory's own tools, declared to the model while the project's memory is on."""
MEMORY_PREAMBLE = "The following Kilo memory blocks are saved project memory"
"""The first words of the section Kilo Memory injects into the system prompt."""
MEMORY_FENCE = "```kilo-memory-v1"
"""How each injected memory block begins (a fenced block, closed by a line of ```)."""
NO_MODELS_FETCH = "KILO_DISABLE_MODELS_FETCH"
_LAUNCHER_ONLY = ("KILO_CONFIG", "KILO_CONFIG_DIR", "KILO_CONFIG_CONTENT", "KILO_DB",
                  "KILO_TUI_CONFIG", "KILO_PERMISSION", "KILO_AUTH_CONTENT",
                  "KILO_SERVER_PASSWORD", "KILO_SERVER_USERNAME", "KILO_API_KEY",
                  "KILO_ORG_ID")
"""The launching service's own Kilo config, database and credentials: never an isolated
run's (amux sets its own `KILO_CONFIG_CONTENT`)."""
_VALUE_OPTIONS = frozenset({"--log-level", "--port", "--hostname", "--mdns-domain", "--cors",
                            "-m", "--model", "-s", "--session", "--worktree", "--prompt",
                            "--agent"})
"""Kilo 7.7.7's top-level options that take a value (`kilo --help`)."""
_NOT_UI = frozenset({"completion", "acp", "mcp", "run", "debug", "auth", "providers", "agent",
                     "upgrade", "uninstall", "serve", "models", "stats", "export", "import",
                     "github", "session", "plugin", "plug", "db", "console", "cloud",
                     "roll-call", "profile", "remote", "daemon", "config", "worktree",
                     "help"})
"""Kilo 7.7.7's subcommands that start no UI (`kilo --help`); `attach` and `pr` are UIs of
their own, anything else in their place the UI's project directory."""

_MEMORY_OFF = f"""\
// amux: Kilo Memory is off for this launch (written by amux, for this amux session only):
// its injected section leaves the system prompt; its tools are denied in the config.
const PREAMBLE = {MEMORY_PREAMBLE!r};
const FENCE = {MEMORY_FENCE!r};
function strip(text) {{
  const start = text.indexOf(PREAMBLE);
  if (start < 0) return text;
  let end = text.indexOf("\\n", start);
  if (end < 0) return text.slice(0, start).trimEnd();
  for (;;) {{
    const rest = text.slice(end).replace(/^\\s+/, "");
    if (!rest.startsWith(FENCE)) break;
    const from = text.length - rest.length;
    const close = text.indexOf("\\n```", from + FENCE.length);
    end = close < 0 ? text.length : close + 4;
  }}
  return (text.slice(0, start) + text.slice(end).replace(/^\\n+/, "")).trimEnd();
}}
export const AmuxKiloMemoryOff = async () => ({{
  "experimental.chat.system.transform": async (_input, output) => {{
    output.system.splice(0, output.system.length, ...output.system.map(strip));
  }},
}});
"""


class KiloAdapter(OpenCodeAdapter):
    name = "kilo"
    display_name = "Kilo Code CLI"
    config_variable = CONTENT
    instructions_file = INSTRUCTIONS_FILE
    plugin_file = PLUGIN_FILE
    session_file = SESSION_FILE
    tool_names = TOOLS
    models_fetch_variable = NO_MODELS_FETCH
    launcher_only = _LAUNCHER_ONLY
    value_options = _VALUE_OPTIONS
    not_ui = _NOT_UI
    session_flags = ("-c", "--continue", "-s", "--session", "--fork", "--cloud-fork")
    endpoint_paths = ENDPOINT_PATHS
    first_request: FirstRequest | None = FirstRequest(
        "7.7.7", memory=RequestSize(0, 0), plain=RequestSize(0, 0))
    key_variables = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "KILO_API_KEY")
    instruction_files = ("AGENTS.md", "CLAUDE.md")
    requires = (
        Requirement("flag", "--session", "`amux run --resume` continues the Kilo session "
                    "(the TUI)"),
        Requirement("flag", "--session", "`amux run --resume` continues the Kilo session "
                    "(`kilo run`)", ("run", "--help")),
        Requirement("env", CONTENT, "the protocol, the memory tools and the session's plugin "
                    "reach Kilo"),
        Requirement("setting", "instructions", "the memory protocol reaches Kilo"),
        Requirement("setting", "environment", "the memory tools reach the Hub"),
        Requirement("setting", "permission", "the memory tools run under a user's ask rule, "
                    "and Kilo Memory's tools are denied"),
        *(Requirement("setting", tool, "Kilo Memory's tools are off for the launch")
          for tool in NATIVE_TOOLS),
        Requirement("setting", "experimental.chat.system.transform", "Kilo Memory's section "
                    "leaves the system prompt of the launch"),
        Requirement("setting", MEMORY_PREAMBLE, "Kilo Memory's section is found in the "
                    "system prompt (to drop it)"),
        Requirement("setting", MEMORY_FENCE.strip("`"), "Kilo Memory's blocks are found in "
                    "the system prompt (to drop them)"),
        Requirement("setting", "plugin", "the Kilo session is learnt, so it can be resumed"),
        Requirement("setting", "session.created", "the Kilo session is learnt, so it can be "
                    "resumed"),
        Requirement("setting", "parentID", "a sub-agent's session is not taken for the "
                    "launch's"),
        *(Requirement("setting", name, "`amux run --endpoint` reaches Kilo")
          for name in ("baseURL", "small_model", "@ai-sdk/openai-compatible",
                       "@ai-sdk/anthropic")),
        Requirement("setting", "{env:", "`--endpoint-key-env` gives the endpoint its key "
                    "without putting it in the config"),
        Requirement("env", NO_MODELS_FETCH, "an `--endpoint` launch does not wait for the "
                    "models catalogue (which knows no local model)"),
        *(Requirement("env", name, "an isolated run reads the target user's config and "
                      "data") for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME",
                                           "XDG_CACHE_HOME", "XDG_STATE_HOME")),
        *(Requirement("env", name, "an isolated run never gets the launching service's "
                      "Kilo config, database or credentials (it is removed)")
          for name in _LAUNCHER_ONLY if name != CONTENT),
    )
    package: str | None = "@kilocode/cli"
    quick_exit_hint = ("log in to a provider (`kilo auth login`; `kilo auth list` shows "
                       "them) and choose a model (`-m provider/model`), or point it at a "
                       "model server: `amux run --endpoint URL --model NAME kilo`")

    def native_memory_off(self, request: AgentRequest) -> tuple[dict[str, Any],
                                                                 tuple[PlanFile, ...],
                                                                 Mapping[str, Any]]:
        """Kilo Memory's tools denied and its section dropped, for this launch (module)."""
        if request.files_dir is None:
            raise PlanRefused("Kilo's launch files need the session's directory")
        plugin = PlanFile(f"{request.files_dir}/{MEMORY_OFF_FILE}", _MEMORY_OFF)
        config = {"permission": dict.fromkeys(NATIVE_TOOLS, "deny"), "plugin": [plugin.path]}
        return config, (plugin,), {"settings": {f"permission.{tool}": "deny"
                                                for tool in NATIVE_TOOLS}
                                   | {"plugin": plugin.path}}

    def headless(self, home: str, scratch: str) -> Headless:
        """`kilo run …` with every XDG directory under `home`, no update, model catalogue
        or telemetry."""
        dirs = xdg_dirs(home)
        return Headless(("run", PROMPT), env=EnvPatch({
            **dirs, "KILO_DISABLE_AUTOUPDATE": "1", NO_MODELS_FETCH: "1",
            "KILO_TELEMETRY_LEVEL": "off"}), dirs=tuple(dirs.values()))
