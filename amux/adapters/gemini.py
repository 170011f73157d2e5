"""Gemini CLI (`gemini`, 0.61.0): memory over MCP, given through a mirror of its home.

What Gemini reads per launch, found in the pinned CLI (docs/agent-findings-gemini.md):
no flag adds to its system prompt (`GEMINI_SYSTEM_MD` replaces it) or registers an MCP
server, and the one settings layer a variable can name (`GEMINI_CLI_SYSTEM_SETTINGS_PATH`)
is skipped unless the file and every directory above it belong to root. What it does
honour is `GEMINI_CLI_HOME`, the home it reads everything from. So a launch with memory
gets a mirror of the user's home (`PlanMirror`: every entry a link to the real one, and
what Gemini writes there moved back after it exits), whose `.gemini` is a mirror of the
user's `~/.gemini` but for two files amux writes:

- `settings.json`: the user's own settings (JSONC) with the `amux` MCP server added to
  their `mcpServers` and `experimental.autoMemory` off;
- the global context file (`GEMINI.md`, or the first `context.fileName`): the user's own
  text, then the protocol, frozen with the session. Gemini puts this file in its system
  instruction, so the model gets the protocol there, byte for byte on resume.

Native memory: Gemini 0.61.0 has no memory tool; its prompt tells the model to save facts
by editing `GEMINI.md` files and `~/.gemini/tmp/<project>/memory/`, and that guidance
cannot be removed per launch. A `--policy` file of this launch denies `write_file` and
`replace` on those paths and allows the `amux` server's tools (a headless run drops any
tool that would need a confirmation). Shell commands writing there are not covered: the
launch says so.

Sessions: `--session-id UUID` chosen up front (derived from the amux id), `--resume UUID`
later; the user's own `--resume`, `--session-id`, `--session-file` and `--delete-session`
are refused. Gemini has no ephemeral mode. Trusted folders stay the user's: their file is
named by `GEMINI_CLI_TRUSTED_FOLDERS_PATH`, so trusting a folder in a launch is kept.
"""

from __future__ import annotations

import json
import os
import posixpath
import re
from collections.abc import Mapping
from types import MappingProxyType

from amux.adapters import jsonc
from amux.adapters.base import (
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
    PlanMirror,
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
    merge_instructions,
    no_quick_exit_cause,
    no_session_files,
    no_unpacked_code,
    refuse,
    with_endpoint,
)
from amux.envpatch import EnvPatch

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

HOME_DIR = "gemini-home"
"""The mirror of the user's home, in the session's own directory."""
POLICY_FILE = "gemini-policy.toml"
CONTEXT_FILE = "GEMINI.md"
"""Gemini's global context file unless the user's `context.fileName` names others."""
_NAMESPACE = "6d0f3d0e-4c52-4f4b-9b8e-6a6d75780002"
"""uuid5 namespace of the Gemini session ids amux chooses (a fixed, arbitrary UUID)."""
SETTINGS = "settings.json"
TRUSTED = "GEMINI_CLI_TRUSTED_FOLDERS_PATH"
ENDPOINT_PATHS: Mapping[EndpointApi, str] = {"gemini": ""}
"""GOOGLE_GEMINI_BASE_URL is the server's root: Gemini adds `/v1beta/models/…`."""
_NO_UI = frozenset({"-p", "--prompt", "-i", "--prompt-interactive", "-h", "--help", "-v",
                    "--version", "-l", "--list-extensions", "--list-sessions",
                    "--delete-session", "--acp", "--experimental-acp"})
"""Gemini CLI 0.61.0's options that start no UI (`gemini --help`; `-i` needs a terminal,
and without one fails as the UI does)."""
_VALUE_OPTIONS = frozenset({"-m", "--model", "-w", "--worktree", "--approval-mode", "--policy",
                            "--admin-policy", "--allowed-mcp-server-names", "--allowed-tools",
                            "-e", "--extensions", "-r", "--resume", "--session-file",
                            "--session-id", "--include-directories", "-o", "--output-format"})
"""Its options that take a value; anything else not an option is a prompt (which runs
without the UI when stdin is no terminal) or a subcommand (`mcp`, …)."""
LIMITS = ("Gemini CLI keeps its own memory guidance in its system prompt; amux denies its "
          "file tools' writes to GEMINI.md and its memory folder for this launch, not shell "
          "commands that write there")


def gemini_home(env: Mapping[str, str]) -> str:
    """The home Gemini reads its `.gemini` from: GEMINI_CLI_HOME, else HOME."""
    return env.get("GEMINI_CLI_HOME") or env.get("HOME") or os.path.expanduser("~")


def _settings(text: str | None, path: str) -> dict[str, Any]:
    """The user's settings.json as an object ({} when absent or blank); `ValueError`
    naming the file when it holds anything else."""
    if text is None or not text.strip():
        return {}
    return jsonc.load_object(text, f"Gemini's {path}", "fix the file (Gemini itself would "
                             "ignore it) and launch again")


def context_names(settings: Mapping[str, Any], where: str) -> list[str]:
    """The global context file names, as Gemini reads `context.fileName` (each trimmed
    and normalized, as Gemini does); `ValueError` naming the setting for a name that is
    not a plain file name. Gemini would look for such a name outside `~/.gemini` itself
    (`../x`) or below it (`sub/x`), where the launch's mirror cannot hold the copy that
    carries the protocol: amux never reads or writes there instead."""
    context = settings.get("context")
    names = context.get("fileName") if isinstance(context, dict) else None
    if isinstance(names, str):
        names = [names]
    if not isinstance(names, list):
        return [CONTEXT_FILE]
    found = []
    for name in names:
        if not isinstance(name, str) or not name.strip():
            continue
        normal = posixpath.normpath(name.strip())
        if "/" in normal or normal in (os.curdir, os.pardir):
            raise PlanRefused(f"{where}: context.fileName {name!r} is not a plain file name; "
                             "amux adds its protocol to Gemini's global context file in "
                             "~/.gemini itself, so name a file there (e.g. \"GEMINI.md\")")
        found.append(normal)
    return found or [CONTEXT_FILE]


def _policy(names: list[str]) -> str:
    """This launch's policy: the amux tools allowed, native memory writes denied. A context
    file is denied however the model spells its path: bare (`GEMINI.md`, which Gemini
    resolves in the work directory), `./`, absolute, or through `..` (Gemini matches the
    pattern against the arguments as the model wrote them). Gemini drops, with only a
    debug message, a pattern its ReDoS check calls unsafe (a quantified group such as
    `(…/)?`), so the optional directory is the alternation `(|…/)`."""
    files = "|".join(re.escape(name) for name in names)
    rules = ['# amux run: this launch\'s policy (written by amux for this session only)\n'
             '[[rule]]\nmcpName = "amux"\ntoolName = "*"\ndecision = "allow"\n'
             'priority = 900\n']
    for tool in ("write_file", "replace"):
        rules.append(
            f'[[rule]]\ntoolName = "{tool}"\n'
            f"argsPattern = '\"file_path\":\"((|[^\"]*/)({files})\"|[^\"]*/\\.gemini/tmp/"
            "[^\"]*/memory/)'\n"
            'decision = "deny"\npriority = 950\n'
            'denyMessage = "amux: Gemini\'s own memory is off for this session; save to amux '
            'memory (the mcp_amux_memory_upsert tool) instead."\n')
    return "\n".join(rules)


def _endpoint(endpoint: EndpointRequest | None) -> EndpointWiring | None:
    """The Gemini API at another base URL (Gemini speaks no other): its base URL and key
    variables and `--model`; the key by name from the user's variable, else a placeholder."""
    if endpoint is None:
        return None
    endpoint_api(endpoint, "Gemini CLI", ENDPOINT_PATHS, "an endpoint speaking the Gemini API "
                 "(--endpoint-api gemini)")
    env = {"GOOGLE_GEMINI_BASE_URL": endpoint.url}
    key = {"GEMINI_API_KEY": endpoint.key_env} if endpoint.key_env else {}
    if not key:
        env["GEMINI_API_KEY"] = NO_KEY
    return EndpointWiring(args=("--model", endpoint.model), env=EnvPatch(
        env, ("GOOGLE_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI"), key))


class GeminiAdapter:
    name = "gemini"
    display_name = "Gemini CLI"
    model_api: ModelApi = "gemini"
    endpoint_paths = ENDPOINT_PATHS
    prompt_args = ("-p", PROMPT)
    without_terminal: NoTerminal = "fails"
    """It reads a prompt from stdin, and exits 42 when none comes ("No input provided via
    stdin")."""
    first_request: FirstRequest | None = FirstRequest(
        "0.61.0", memory=RequestSize(53442, 13361), plain=RequestSize(45885, 11472))
    key_variables = ("GEMINI_API_KEY",)
    instruction_files = ("GEMINI.md",)
    mcp_tool_prefix: str | None = "mcp_amux_"
    channel: Channel = "mcp"
    tracks_sessions = True
    version_args: tuple[str, ...] | None = ("--version",)
    probe_env = EnvPatch(MappingProxyType({"GEMINI_CLI_NO_RELAUNCH": "true"}))
    """Gemini starts again as a child with a larger heap unless told not to: twice the
    start (~2.5 s here) for a version or a help."""
    version = first_line_version
    requires = (
        *chosen_session("--session-id", "--resume"),
        Requirement("flag", "--policy", "the memory tools run in a headless launch and "
                    "Gemini's own memory files are not written"),
        Requirement("flag", "--model", "`amux run --model` is the model Gemini uses"),
        Requirement("env", "GEMINI_CLI_HOME", "the launch's settings (the memory tools, "
                    "auto-memory off) and the protocol reach Gemini"),
        Requirement("env", TRUSTED, "folders trusted in a launch stay trusted"),
        Requirement("env", "GOOGLE_GEMINI_BASE_URL", "`amux run --endpoint` reaches Gemini"),
        Requirement("env", "GEMINI_API_KEY", "`--endpoint-key-env` gives the endpoint its key"),
        Requirement("env", "GOOGLE_API_KEY", "the user's Google key is kept from another "
                    "endpoint"),
        Requirement("env", "GOOGLE_GENAI_USE_VERTEXAI", "an endpoint launch does not go to "
                    "Vertex AI"),
        Requirement("env", "GEMINI_CLI_SYSTEM_SETTINGS_PATH", "an isolated run reads the "
                    "target's system settings, not the launcher's (it is removed)"),
        Requirement("setting", "mcpServers", "the memory tools reach Gemini"),
        Requirement("setting", "autoMemory", "Gemini's own auto-memory stays off"),
        Requirement("setting", "mcpName", "the memory tools are allowed by the policy"),
        Requirement("setting", "argsPattern", "writes to Gemini's own memory files are denied"),
        Requirement("setting", "selectedType", "an endpoint launch uses API-key auth"),
    )
    package: str | None = "@google/gemini-cli"
    exit_meanings: Mapping[int, str] = MappingProxyType({55: (
        "Gemini CLI does not trust this folder (its exit 55: FatalUntrustedWorkspaceError), "
        "so it ran nothing; trust the folder once in Gemini's interactive mode (`amux run "
        "gemini` here, then answer its trust question), or let this run skip the check: "
        "amux run gemini -- --skip-trust …")})
    quick_exit_hint = ("log in (`gemini`, then choose a sign-in), or set GEMINI_API_KEY, or "
                       "point it at a Gemini API server: `amux run --endpoint URL --model NAME "
                       "gemini`")

    def user_settings(self, args: tuple[str, ...], probe: Probe) -> Mapping[str, str]:
        """The home Gemini would read and its settings text, and the user's own trusted
        folders file when they name one."""
        home = gemini_home(probe.env)
        path = os.path.join(home, ".gemini", SETTINGS)
        try:
            text = probe.read_text(path)
        except (OSError, ValueError) as exc:
            raise PlanRefused(f"cannot read Gemini's {path}: {exc}") from None
        found = {"home": home, **({SETTINGS: text} if text is not None else {})}
        if probe.env.get(TRUSTED):
            found[TRUSTED] = probe.env[TRUSTED]
        return found

    def user_instructions(self, args: tuple[str, ...], probe: Probe) -> tuple[str, ...]:
        """The user's global context file, which the launch's mirror replaces with it and
        the protocol."""
        settings = self.user_settings(args, probe)
        home = settings["home"]
        where = f"{home}/.gemini/{SETTINGS}"
        names = context_names(_settings(settings.get(SETTINGS), where), f"Gemini's {where}")
        path = os.path.join(home, ".gemini", names[0])
        try:
            text = probe.read_text(path)
        except (OSError, ValueError) as exc:
            raise PlanRefused(f"cannot read Gemini's {path}: {exc}") from None
        return (text,) if text else ()

    def isolated_env(self, home: str) -> EnvPatch:
        return EnvPatch(unset=("GEMINI_CLI_HOME", TRUSTED, "GEMINI_CLI_SYSTEM_SETTINGS_PATH"))

    unpacked_code = no_unpacked_code
    session_files = no_session_files
    quick_exit_cause = no_quick_exit_cause

    def starts_ui(self, args: tuple[str, ...]) -> bool:
        return not has_flag(args, _NO_UI) and first_operand(args, _VALUE_OPTIONS) is None

    def kept_session(self, ref: str, env: Mapping[str, str]) -> tuple[str, str] | None:
        """`~/.gemini/tmp/<project>/chats/session-<time>-<the id's first 8 hex>.jsonl`
        (through the launch's mirror, whose `tmp` is the real one)."""
        return os.path.join(gemini_home(env), ".gemini", "tmp"), f"session-*-{ref[:8]}.jsonl"

    def own_resume(self, ref: str) -> tuple[str, ...] | None:
        return ("--resume", ref)

    def new_session_ref(self, session_id: str, state_dir: str) -> str | None:
        return chosen_uuid(_NAMESPACE, session_id)

    def headless(self, home: str, scratch: str) -> Headless:
        """`gemini -p … --approval-mode auto_edit`. HOME is the run's, so the launch's mirror
        is made from `home/.gemini`: API-key auth selected there (an endpoint launch forces
        it too), and the work directory trusted by the variable (no trusted-folders file)."""
        dot = os.path.join(home, ".gemini")
        settings = json.dumps({"security": {"auth": {"selectedType": "gemini-api-key"}}},
                              indent=2) + "\n"
        return Headless(("-p", PROMPT, "--approval-mode", "auto_edit"),
                        env=EnvPatch({"GEMINI_CLI_TRUST_WORKSPACE": "true"}), dirs=(dot,),
                        files=(PlanFile(os.path.join(dot, "settings.json"), settings),),
                        limits=(LIMITS,))

    def plan(self, request: AgentRequest) -> LaunchPlan:
        refuse(request.args, ("--resume", "-r", "--session-id", "--session-file",
                              "--delete-session"), "Gemini CLI")
        ref = request.agent_session
        session = ([] if ref is None else
                   ["--resume", ref] if request.resume else ["--session-id", ref])
        endpoint = _endpoint(request.endpoint)
        memory = request.memory
        plain = LaunchPlan((request.executable, *session, *request.args), agent_session=ref)
        if request.files_dir is None or (memory is None and endpoint is None):
            return with_endpoint(plain, endpoint)
        found = request.user_settings or NOTHING
        home = found.get("home") or gemini_home({})
        real = os.path.join(home, ".gemini")
        try:
            settings = _settings(found.get(SETTINGS), os.path.join(real, SETTINGS))
        except ValueError as problem:
            raise PlanRefused(str(problem)) from None
        ours = dict(settings)
        if endpoint is not None:  # its base URL alone selects an auth Gemini refuses
            security = settings.get("security")
            security = security if isinstance(security, dict) else {}
            auth = security.get("auth")
            ours["security"] = {**security, "auth": {**(auth if isinstance(auth, dict) else {}),
                                                     "selectedType": "gemini-api-key"}}
        mirror = os.path.join(request.files_dir, HOME_DIR)
        dot = os.path.join(mirror, ".gemini")
        env = {"GEMINI_CLI_HOME": mirror}
        if TRUSTED not in found:
            env[TRUSTED] = os.path.join(real, "trustedFolders.json")
        if memory is None:  # an endpoint launch: only the auth setting
            return with_endpoint(plain._replace(
                env=EnvPatch(env), files=(_settings_file(dot, ours),),
                mirrors=(PlanMirror(mirror, home, (".gemini",)),
                         PlanMirror(dot, real, (SETTINGS,)))), endpoint)
        try:
            names = context_names(settings, f"Gemini's {os.path.join(real, SETTINGS)}")
        except ValueError as problem:
            raise PlanRefused(str(problem)) from None
        instructions = request.frozen_instructions or merge_instructions(
            list(request.user_instructions), memory.protocol) or ""
        servers, experimental = settings.get("mcpServers"), settings.get("experimental")
        ours["mcpServers"] = {**(servers if isinstance(servers, dict) else {}), "amux": {
            "command": memory.mcp_command[0], "args": list(memory.mcp_command[1:]),
            "env": dict(memory.env)}}
        ours["experimental"] = {**(experimental if isinstance(experimental, dict) else {}),
                                "autoMemory": False}
        policy = os.path.join(request.files_dir, POLICY_FILE)
        files = (_settings_file(dot, ours), PlanFile(os.path.join(dot, names[0]), instructions),
                 PlanFile(policy, _policy(names)))
        return with_endpoint(LaunchPlan(
            (request.executable, *session, "--policy", policy, *request.args),
            env=EnvPatch(env),
            channel="mcp", instructions=instructions,
            suppression={"argv": ["--policy", policy],
                         "settings": {"experimental.autoMemory": False}},
            agent_session=ref, warnings=() if request.resume else (LIMITS,), files=files,
            mirrors=(PlanMirror(mirror, home, (".gemini",)),
                     PlanMirror(dot, real, (SETTINGS, names[0])))), endpoint)


def _settings_file(dot: str, settings: Mapping[str, Any]) -> PlanFile:
    return PlanFile(os.path.join(dot, SETTINGS), json.dumps(settings, indent=2) + "\n")
