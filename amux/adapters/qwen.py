"""Qwen Code (`qwen`, @qwen-code/qwen-code 0.24.4): protocol through `--append-system-prompt`,
tools over MCP, native memory off through a per-launch system settings file.

What Qwen reads per launch, found in the pinned CLI (docs/agent-findings-qwen.md; a fork of
Gemini CLI that for amux behaves like Claude Code):

- Instructions: its system message holds its own prompt, then every context file
  (`QWEN.md`, `AGENTS.md`, or the user's `context.fileName`: global ones, then the
  project's), then the text of `--append-system-prompt`. Qwen reads the context files
  itself; every `--append-system-prompt` the user passed and the protocol become ONE value
  (the user's text first, unchanged): Qwen crashes when the flag is given twice. On resume
  the frozen text is passed byte for byte.
- MCP: ONE `--mcp-config` (given twice, Qwen exits 52): a file of the launch's own in the
  session's directory (0600, written before every launch; never the JSON inline, which
  would put the servers' tokens in argv), holding the servers of the user's own
  `--mcp-config` values (a file, read by `user_settings` as Qwen would, relative to the
  cwd, or inline JSON) with `amux` added: `trust: true` (a headless run declines an untrusted
  tool's call) and `alwaysLoadTools: true` (else the tools are deferred behind
  `tool_search`). The servers of the user's settings stay (Qwen merges `--mcp-config` over
  them). The tools reach the model as `mcp__amux__<tool>`. A user's
  `--allowed-mcp-server-names` without `amux` filters the server out: the launch says so.
- Native memory: 0.24.4 has no memory tool; its managed auto-memory (a `# auto memory`
  section with both `MEMORY.md` indexes in the system prompt, an extractor sub-agent after a
  turn, "dream" consolidation) is on by default and has no flag or variable. It is turned
  off for the launch only by a system settings file of the launch's own
  (`QWEN_CODE_SYSTEM_SETTINGS_PATH`, the top settings layer; Qwen makes no ownership
  check): the machine's own system settings (the file the user's
  `QWEN_CODE_SYSTEM_SETTINGS_PATH` names, else `/etc/qwen-code/settings.json`) with
  `memory.enableManagedAutoMemory` and `memory.enableManagedAutoDream` false, written in the
  amux session's directory before every launch. Since Qwen looks for the system defaults
  beside the system settings, `QWEN_CODE_SYSTEM_DEFAULTS_PATH` names the machine's defaults
  file unless the user named one.
- Sessions: `--session-id UUID` (derived from the amux id) on start, `--resume UUID` later,
  kept in `<QWEN_RUNTIME_DIR, QWEN_HOME or ~/.qwen>/projects/<cwd>/chats/<UUID>.jsonl`; the
  user's own `--resume`/`-r`, `--continue`/`-c`, `--session-id` and `--fork-session` are
  refused. With `--chat-recording=false` Qwen keeps nothing: not resumable.
- Endpoint: `--auth-type openai|anthropic|gemini --model NAME` and that API's base URL and
  key variables (the key by name from the user's variable, else a placeholder).
"""

from __future__ import annotations

import errno
import json
import os
from collections.abc import Mapping

from amux.adapters import jsonc
from amux.adapters.base import (
    NO_EXIT_MEANINGS,
    NO_KEY,
    NOTHING,
    PROMPT,
    AgentRequest,
    Channel,
    EndpointApi,
    EndpointRequest,
    EndpointWiring,
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
    chosen_session,
    chosen_uuid,
    endpoint_api,
    first_line_version,
    first_operand,
    has_flag,
    ignored_on_resume,
    merge_instructions,
    no_quick_exit_cause,
    no_session_files,
    no_unpacked_code,
    refuse,
    take_option,
    with_endpoint,
)
from amux.envpatch import EnvPatch

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_NAMESPACE = "3f9a6c1e-2b7d-4e58-9c0a-51d7e4b2a903"
"""uuid5 namespace of the Qwen session ids amux chooses (a fixed, arbitrary UUID)."""
SETTINGS_FILE = "qwen-system-settings.json"
MCP_FILE = "qwen-mcp.json"
"""The launch's one `--mcp-config`, in the session's directory (0600): the user's servers
may hold tokens, which argv (`/proc/PID/cmdline`, `ps`) would show every local user."""
"""The launch's system settings file, in the amux session's directory."""
SYSTEM_SETTINGS = "QWEN_CODE_SYSTEM_SETTINGS_PATH"
SYSTEM_DEFAULTS = "QWEN_CODE_SYSTEM_DEFAULTS_PATH"
MACHINE_SETTINGS = "/etc/qwen-code/settings.json"
"""Where Qwen reads the system settings on Linux when no variable names them."""


def defaults_beside(settings: str) -> str:
    """Where Qwen reads the system defaults when no variable names them: beside the system
    settings."""
    return os.path.join(os.path.dirname(settings), "system-defaults.json")


MACHINE_DEFAULTS = defaults_beside(MACHINE_SETTINGS)
SETTINGS_VERSION = 4
"""The settings format of 0.24.4 (`$version`); a file without it is migrated and rewritten."""
MEMORY_OFF = {"enableManagedAutoMemory": False, "enableManagedAutoDream": False}
NO_RECORDING = ("started with Qwen Code's --chat-recording=false: Qwen saved nothing to "
                "resume")
ISOLATED = ("QWEN_HOME", "QWEN_RUNTIME_DIR", "QWEN_CODE_TRUSTED_FOLDERS_PATH", SYSTEM_SETTINGS,
            SYSTEM_DEFAULTS, "QWEN_CODE_MCP_APPROVALS_PATH", "QWEN_CODE_MEMORY_BASE_DIR",
            "QWEN_CODE_MEMORY_LOCAL")
"""What points Qwen at one user's config, state and memory: removed in an isolated run."""
ENDPOINTS: Mapping[EndpointApi, tuple[str, str]] = {
    "openai": ("OPENAI_BASE_URL", "OPENAI_API_KEY"),
    "anthropic": ("ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY"),
    "gemini": ("GOOGLE_GEMINI_BASE_URL", "GEMINI_API_KEY"),
}
"""The base URL and key variables Qwen reads for each `--auth-type` amux can point it at."""
ENDPOINT_PATHS: Mapping[EndpointApi, str] = {"openai": "/v1", "anthropic": "", "gemini": ""}
"""Those base URLs: the OpenAI API's `/v1` (Qwen adds `/chat/completions`), the Anthropic
and Gemini servers' roots (it adds `/v1/messages`, `/v1beta/models/…`)."""
MCP_CONFIG = "--mcp-config"
"""`user_settings`' key for the texts of the user's own `--mcp-config` values (a JSON list)."""
_NO_UI = frozenset({"-p", "--prompt", "-i", "--prompt-interactive", "-h", "--help", "-v",
                    "--version", "-l", "--list-extensions", "--acp"})
"""Qwen Code 0.24.4's options that start no UI (`qwen --help`; `-i` needs a terminal, and
without one fails as the UI does)."""
_VALUE_OPTIONS = frozenset({
    "--telemetry-target", "--telemetry-otlp-endpoint", "--telemetry-otlp-protocol",
    "--telemetry-outfile", "--proxy", "-m", "--model", "--fallback-model", "--system-prompt",
    "--append-system-prompt", "--output-style", "--sandbox-image", "--approval-mode",
    "--channel", "--allowed-mcp-server-names", MCP_CONFIG, "--allowed-tools", "-e",
    "--extensions", "--include-directories", "--add-dir", "--openai-logging-dir",
    "--openai-api-key", "--openai-base-url", "--input-format", "-o", "--output-format",
    "--json-fd", "--json-file", "--json-schema", "--input-file", "-r", "--resume",
    "--session-id", "--worktree", "--max-session-turns", "--max-wall-time", "--max-tool-calls",
    "--max-subagent-depth", "--core-tools", "--exclude-tools", "--disabled-slash-commands",
    "--auth-type"})
"""Its options that take a value; anything else not an option is a prompt (one-shot) or a
subcommand (`mcp`, `sessions`, …)."""


def qwen_home(env: Mapping[str, str]) -> str:
    """Qwen's own directory: QWEN_HOME (the directory itself), else `~/.qwen`."""
    return env.get("QWEN_HOME") or os.path.join(env.get("HOME") or os.path.expanduser("~"),
                                                ".qwen")


def _is_off(args: tuple[str, ...], flag: str) -> bool:
    """Whether boolean `flag` is given false (`--flag=false`, `--flag false`, `--no-flag`)."""
    for index, arg in enumerate(args):
        if arg in (f"{flag}=false", f"{flag}=0", f"--no-{flag[2:]}"):
            return True
        if arg == flag and index + 1 < len(args) and args[index + 1] in ("false", "0"):
            return True
    return False


def _servers(texts: list[str]) -> dict[str, Any]:
    """The servers of the user's `--mcp-config` values, as Qwen reads one (JSONC; the object
    under `mcpServers`, else the object itself), later values over earlier ones."""
    servers: dict[str, Any] = {}
    for text in texts:
        try:
            value = jsonc.load_object(text, f"--mcp-config {text[:60]!r}", "give a JSON "
                                      'object {"mcpServers": {…}} or a file holding one')
        except ValueError as problem:
            raise PlanRefused(str(problem)) from None
        found = value.get("mcpServers")
        servers.update(found if isinstance(found, dict) else value)
    return servers


def _endpoint(endpoint: EndpointRequest | None) -> EndpointWiring | None:
    """`--auth-type API --model NAME` with that API's base URL and key: the key by name
    from the user's variable, else a placeholder (Qwen needs one)."""
    if endpoint is None:
        return None
    api = endpoint_api(endpoint, "Qwen Code", ENDPOINT_PATHS,
                       "an OpenAI-compatible, Anthropic Messages or Gemini API endpoint")
    url, key = ENDPOINTS[api]
    return EndpointWiring(
        args=("--auth-type", api, "--model", endpoint.model),
        env=EnvPatch({url: endpoint.url, **({} if endpoint.key_env else {key: NO_KEY})},
                     copy={key: endpoint.key_env} if endpoint.key_env else {}))


class QwenAdapter:
    name = "qwen"
    display_name = "Qwen Code"
    model_api: ModelApi = "chat"
    endpoint_paths = ENDPOINT_PATHS
    prompt_args = (PROMPT,)
    """Its positional prompt, one-shot (`-p` is deprecated)."""
    without_terminal: NoTerminal = "fails"
    """It reads a prompt from stdin, and exits 1 when none comes ("No input provided via
    stdin")."""
    first_request: FirstRequest | None = FirstRequest(
        "0.24.4", memory=RequestSize(68781, 17196), plain=RequestSize(68394, 17099))
    key_variables = ("OPENAI_API_KEY",)
    instruction_files = ("QWEN.md", "AGENTS.md")
    mcp_tool_prefix: str | None = "mcp__amux__"
    channel: Channel = "mcp"
    tracks_sessions = True
    version_args: tuple[str, ...] | None = ("--version",)
    probe_env = EnvPatch()
    """`--version` and `--help` answer at once, before Qwen's relaunch (0.1 s)."""
    version = first_line_version
    requires = (
        *chosen_session("--session-id", "--resume"),
        Requirement("flag", "--append-system-prompt", "the memory protocol reaches Qwen"),
        Requirement("flag", MCP_CONFIG, "the memory tools reach Qwen"),
        Requirement("flag", "--auth-type", "`amux run --endpoint` selects the endpoint's API"),
        Requirement("flag", "--model", "`amux run --model` is the model Qwen uses"),
        Requirement("setting", "alwaysLoadTools", "the memory tools are sent up front, not "
                    "deferred behind tool_search"),
        Requirement("setting", "trust", "the memory tools run in a headless launch"),
        Requirement("setting", "enableManagedAutoMemory", "Qwen's own auto-memory stays off"),
        Requirement("setting", "enableManagedAutoDream", "Qwen's memory consolidation stays "
                    "off"),
        Requirement("env", SYSTEM_SETTINGS, "the launch's settings (auto-memory off) reach "
                    "Qwen"),
        Requirement("env", SYSTEM_DEFAULTS, "the machine's system defaults still apply"),
        *(Requirement("env", url, "`amux run --endpoint` reaches Qwen")
          for url, _ in ENDPOINTS.values()),
        *(Requirement("env", key, "`--endpoint-key-env` gives the endpoint its key")
          for _, key in ENDPOINTS.values()),
        *(Requirement("env", name, "an isolated run reads the target's own Qwen config and "
                      "state (it is removed)") for name in ISOLATED if name not in
          (SYSTEM_SETTINGS, SYSTEM_DEFAULTS)),
    )
    package: str | None = "@qwen-code/qwen-code"
    exit_meanings: Mapping[int, str] = NO_EXIT_MEANINGS
    quick_exit_hint = ("set OPENAI_API_KEY, OPENAI_BASE_URL and OPENAI_MODEL (or choose an auth "
                       "type in ~/.qwen/settings.json), or point it at a model server: "
                       "`amux run --endpoint URL --model NAME qwen`; note that Qwen Code "
                       "0.24.4 declares Node 22 (`amux doctor` compares it with yours)")

    unpacked_code = no_unpacked_code
    quick_exit_cause = no_quick_exit_cause
    session_files = no_session_files

    def starts_ui(self, args: tuple[str, ...]) -> bool:
        return not has_flag(args, _NO_UI) and first_operand(args, _VALUE_OPTIONS) is None

    def user_instructions(self, args: tuple[str, ...], probe: Probe) -> tuple[str, ...]:
        return ()  # Qwen reads its context files itself; `plan` merges the flags

    def user_settings(self, args: tuple[str, ...], probe: Probe) -> Mapping[str, str]:
        """The machine's system settings (path, and text when the file exists), the system
        defaults path to keep when the user named none, and the texts of the user's own
        `--mcp-config` values (a file as Qwen reads it, relative to the cwd, else the value)."""
        system = probe.env.get(SYSTEM_SETTINGS) or MACHINE_SETTINGS
        found = {SYSTEM_SETTINGS: system, **_read(probe, system, "system settings")}
        if not probe.env.get(SYSTEM_DEFAULTS):
            found[SYSTEM_DEFAULTS] = defaults_beside(system)
        _, values = take_option(args, (MCP_CONFIG,))
        if values:
            found[MCP_CONFIG] = json.dumps([_file_or_text(probe, value) for value in values])
        return found

    def isolated_env(self, home: str) -> EnvPatch:
        return EnvPatch(unset=ISOLATED)  # Qwen then reads `<home>/.qwen`, /etc/qwen-code

    def kept_session(self, ref: str, env: Mapping[str, str]) -> tuple[str, str] | None:
        """`<runtime dir>/projects/<the cwd, sanitized>/chats/<id>.jsonl`."""
        runtime = env.get("QWEN_RUNTIME_DIR") or qwen_home(env)
        return os.path.join(runtime, "projects"), f"{ref}.jsonl"

    def own_resume(self, ref: str) -> tuple[str, ...] | None:
        return ("--resume", ref)

    def new_session_ref(self, session_id: str, state_dir: str) -> str | None:
        return chosen_uuid(_NAMESPACE, session_id)

    def headless(self, home: str, scratch: str) -> Headless:
        """`qwen -p … --approval-mode auto-edit` (file edits allowed, as a user approving
        them would), Qwen's directory in the run's home, no usage statistics."""
        dot = os.path.join(home, ".qwen")
        return Headless(("-p", PROMPT, "--approval-mode", "auto-edit"),
                        env=EnvPatch({"QWEN_HOME": dot, "QWEN_USAGE_STATISTICS_ENABLED": "false",
                                      "TMPDIR": scratch}),
                        dirs=(dot,))

    def plan(self, request: AgentRequest) -> LaunchPlan:
        refuse(request.args, ("--resume", "-r", "--continue", "-c", "--session-id",
                              "--fork-session"), "Qwen Code")
        ref = request.agent_session
        session = ([] if ref is None else
                   ["--resume", ref] if request.resume else ["--session-id", ref])
        not_resumable = NO_RECORDING if _is_off(request.args, "--chat-recording") else None
        memory = request.memory
        endpoint = _endpoint(request.endpoint)
        if memory is None:  # Qwen as it is; only our session id added
            return with_endpoint(LaunchPlan((request.executable, *session, *request.args),
                                            agent_session=ref, not_resumable=not_resumable),
                                 endpoint)
        if request.files_dir is None:
            raise PlanRefused("Qwen Code needs the session's directory for its settings file")
        args, appended = take_option(request.args, ("--append-system-prompt",))
        args, _ = take_option(tuple(args), (MCP_CONFIG,))
        fresh = merge_instructions(appended, memory.protocol)
        instructions = request.frozen_instructions or fresh or ""
        found = request.user_settings or NOTHING
        servers = _servers(json.loads(found.get(MCP_CONFIG, "[]")))
        servers["amux"] = {"command": memory.mcp_command[0], "args": list(memory.mcp_command[1:]),
                           "env": dict(memory.env), "trust": True, "alwaysLoadTools": True}
        mcp_config = os.path.join(request.files_dir, MCP_FILE)
        path = os.path.join(request.files_dir, SETTINGS_FILE)
        env = {SYSTEM_SETTINGS: path}
        if found.get(SYSTEM_DEFAULTS) or SYSTEM_SETTINGS not in found:  # else the user's own
            env[SYSTEM_DEFAULTS] = found.get(SYSTEM_DEFAULTS) or MACHINE_DEFAULTS
        warnings = ignored_on_resume(request, "--append-system-prompt", appended, fresh)
        _, allowed = take_option(request.args, ("--allowed-mcp-server-names",))
        if allowed and "amux" not in ",".join(allowed).replace(",", " ").split():
            warnings.append("--allowed-mcp-server-names leaves out the server `amux`: Qwen "
                            "will not offer the memory tools; add amux to the list")
        plan = LaunchPlan(
            (request.executable, *session, f"--append-system-prompt={instructions}",
             f"{MCP_CONFIG}={mcp_config}", *args),
            env=EnvPatch(env), channel="mcp", instructions=instructions,
            suppression={"env": {SYSTEM_SETTINGS: path},
                         "settings": {f"memory.{key}": value for key, value in MEMORY_OFF.items()}},
            agent_session=ref, warnings=tuple(warnings), not_resumable=not_resumable,
            files=(PlanFile(path, _system_settings(found)),
                   PlanFile(mcp_config, json.dumps({"mcpServers": servers}, indent=2,
                                                   sort_keys=True) + "\n",
                            private=MCP_CONFIG in found)))
        return with_endpoint(plan, endpoint)


def _read(probe: Probe, path: str, what: str) -> dict[str, str]:
    """{"text": the file's text} as Qwen's user reads it, {} when it does not exist;
    `ValueError` naming it when it cannot be read."""
    try:
        text = probe.read_text(path)
    except (OSError, ValueError) as exc:
        raise PlanRefused(f"cannot read Qwen Code's {what} {path}: {exc}") from None
    return {} if text is None else {"text": text}


def _file_or_text(probe: Probe, value: str) -> str:
    """A `--mcp-config` value as Qwen reads it: the text of the file it names (relative to
    the cwd) when there is one, else the value itself (inline JSON); `ValueError` naming a
    file that exists but cannot be read."""
    try:
        text = probe.read_text(os.path.join(probe.cwd, value))
    except OSError as exc:  # a long JSON text is no file name (ENAMETOOLONG): the value
        if exc.errno in (errno.ENAMETOOLONG, errno.ENOTDIR):
            return value
        raise PlanRefused(f"cannot read the --mcp-config file {value}: {exc}") from None
    except ValueError as exc:
        raise PlanRefused(f"cannot read the --mcp-config file {value}: {exc}") from None
    return value if text is None else text


def _system_settings(found: Mapping[str, str]) -> str:
    """The launch's system settings: the machine's own (JSONC) with managed auto-memory and
    its consolidation off. Its `$version` is kept (Qwen migrates an older file); a launch
    with no machine file gets 0.24.4's, so Qwen has nothing to migrate and rewrite."""
    text = found.get("text")
    where = f"Qwen Code's system settings {found.get(SYSTEM_SETTINGS, MACHINE_SETTINGS)}"
    settings: dict[str, Any] = {"$version": SETTINGS_VERSION}
    try:
        if text and text.strip():
            settings = jsonc.load_object(text, where, "fix the file (Qwen itself reports it) "
                                         "and launch again")
    except ValueError as problem:
        raise PlanRefused(str(problem)) from None
    memory = settings.get("memory")
    settings["memory"] = {**(memory if isinstance(memory, dict) else {}), **MEMORY_OFF}
    return json.dumps(settings, indent=2) + "\n"
