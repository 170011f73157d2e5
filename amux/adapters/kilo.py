"""Kilo Code CLI (`kilo`, npm `@kilocode/cli`): a fork of OpenCode, launched as OpenCode is.

Kilo 7.7.7 keeps OpenCode's config format and layers under its own names
(docs/agent-findings-kilo.md): the last layer is inline JSONC in `KILO_CONFIG_CONTENT`,
merged over `~/.config/kilo/kilo.json` (and `opencode.json`, `config.json`), the
project's `kilo.json` and `.kilo/`. So `OpenCodeAdapter` does the work: the protocol as one
more `instructions` file (after the user's AGENTS.md and their own `instructions`), the
memory tools as `mcp.amux` beside the user's servers, their five names `allow`ed, the
session-recording plugin, `--session ID` to resume and the endpoint's provider. What this
module adds is Kilo's own:

- Kilo Memory, off for a launch with memory, the user's setting kept. Kilo switches it per
  project in `$XDG_DATA_HOME/kilo/memory/<project>-<hash>/state.json` (`kilo serve` and
  `POST /memory/enable`, or the TUI's `/memory`), with no config key, flag or variable,
  and everything it does (its two tools, the section injected into the system prompt, the
  capture that sends each finished turn to the model for a digest and consolidation)
  follows that file. So the launch gives Kilo a mirror of the data directory
  (`PlanMirror`, as Gemini's home): `XDG_DATA_HOME` is `<session>/kilo-data`, each entry
  a link to the user's own (`kilo.db`, `auth.json`, logs, snapshots: sessions are kept
  and resumed as ever) but `kilo/memory`, which is not there: Kilo finds no memory state,
  which is memory off. What Kilo creates in the mirror goes back when it exits.
- `--cloud-fork` is refused with the session flags, `kilo attach` like `opencode attach`.
- The launching service's `KILO_*` config, database and credentials are not an isolated
  run's. No ephemeral mode exists (every session is kept).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from types import MappingProxyType

from amux.adapters.base import (
    MEMORY_TOOLS,
    PROMPT,
    AgentRequest,
    FirstRequest,
    Headless,
    LaunchPlan,
    PlanMirror,
    PlanRefused,
    Probe,
    RequestSize,
    Requirement,
)
from amux.adapters.opencode import ENDPOINT_PATHS, OpenCodeAdapter, xdg_dirs
from amux.envpatch import EnvPatch

CONTENT = "KILO_CONFIG_CONTENT"
INSTRUCTIONS_FILE = "kilo-instructions.md"
PLUGIN_FILE = "kilo-session.js"
SESSION_FILE = "kilo-session"
DATA_MIRROR = "kilo-data"
"""The mirror of the user's `XDG_DATA_HOME`, in the session's own directory."""
TOOLS = tuple(f"amux_{tool}" for tool in MEMORY_TOOLS)
"""The memory tools as Kilo names them (`<server>_<tool>`, as OpenCode does)."""
DATA = "XDG_DATA_HOME"
MEMORY_DIR = "memory"
"""Kilo Memory's directory in Kilo's data directory (`$XDG_DATA_HOME/kilo`)."""
NO_MODELS_FETCH = "KILO_DISABLE_MODELS_FETCH"
_LAUNCHER_ONLY = ("KILO_CONFIG", "KILO_CONFIG_DIR", "KILO_CONFIG_CONTENT", "KILO_DB",
                  "KILO_TUI_CONFIG", "KILO_PERMISSION", "KILO_AUTH_CONTENT",
                  "KILO_SERVER_PASSWORD", "KILO_SERVER_USERNAME", "KILO_API_KEY",
                  "KILO_ORG_ID")
"""The launching service's own Kilo config, database and credentials: never an isolated
run's (amux sets its own `KILO_CONFIG_CONTENT`)."""
_VALUE_OPTIONS = frozenset({"--log-level", "--port", "--hostname", "--mdns-domain", "--cors",
                            "-m", "--model", "-s", "--session", "--worktree", "--prompt",
                            "--agent", "--replay-limit"})
"""Kilo 7.7.7's top-level options that take a value (`kilo --help`)."""
_NOT_UI = frozenset({"completion", "acp", "mcp", "run", "debug", "auth", "providers", "agent",
                     "upgrade", "uninstall", "serve", "models", "stats", "export", "import",
                     "github", "session", "plugin", "plug", "db", "console", "cloud",
                     "roll-call", "profile", "remote", "daemon", "config", "worktree",
                     "help"})
"""Kilo 7.7.7's subcommands that start no UI (`kilo --help`); `attach` and `pr` are UIs of
their own, anything else in their place the UI's project directory."""


def data_home(env: Mapping[str, str]) -> str:
    """The `XDG_DATA_HOME` Kilo reads (`~/.local/share` when unset or empty)."""
    home = env.get("HOME") or os.path.expanduser("~")
    return env.get(DATA) or os.path.join(home, ".local", "share")


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
        "7.7.7", memory=RequestSize(55925, 13982), plain=RequestSize(50926, 12732))
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
        Requirement("setting", "permission", "the memory tools run under a user's ask rule"),
        Requirement("env", DATA, "Kilo Memory is off for the launch: Kilo reads its switch "
                    "from `$XDG_DATA_HOME/kilo/memory`, which the launch's mirror leaves out"),
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
    probe_env = EnvPatch(MappingProxyType({"KILO_TELEMETRY_LEVEL": "off"}))
    """Its help and version, asked by `amux doctor` and a launch, send no telemetry (at exit
    Kilo waits up to 2 s to flush PostHog events, which a start that only prints pays)."""
    package: str | None = "@kilocode/cli"
    quick_exit_hint = ("log in to a provider (`kilo auth login`; `kilo auth list` shows "
                       "them) and choose a model (`-m provider/model`), or point it at a "
                       "model server: `amux run --endpoint URL --model NAME kilo`")

    def user_settings(self, args: tuple[str, ...], probe: Probe) -> Mapping[str, str]:
        """The user's own `KILO_CONFIG_CONTENT` (merged into) and the data directory the
        launch mirrors."""
        return {**super().user_settings(args, probe), DATA: data_home(probe.env)}

    def native_memory_off(self, request: AgentRequest, plan: LaunchPlan) -> LaunchPlan:
        """Kilo's data directory through a mirror without `kilo/memory` (module doc)."""
        if request.files_dir is None:
            raise PlanRefused("Kilo's launch needs the session's directory")
        source = request.user_settings.get(DATA) or data_home({})
        mirror = os.path.join(request.files_dir, DATA_MIRROR)
        return plan._replace(
            env=plan.env._replace(set={**plan.env.set, DATA: mirror}),
            suppression={"env": {DATA: mirror}},
            mirrors=(PlanMirror(mirror, source, ("kilo",)),
                     PlanMirror(os.path.join(mirror, "kilo"), os.path.join(source, "kilo"),
                                (MEMORY_DIR,))))

    def headless(self, home: str, scratch: str) -> Headless:
        """`kilo run …` with every XDG directory under `home`, no update, model catalogue
        or telemetry."""
        dirs = xdg_dirs(home)
        return Headless(("run", PROMPT), env=EnvPatch({
            **dirs, "KILO_DISABLE_AUTOUPDATE": "1", NO_MODELS_FETCH: "1",
            "KILO_TELEMETRY_LEVEL": "off"}), dirs=tuple(dirs.values()))
