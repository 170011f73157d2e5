"""Cline CLI (`cline`, 3.0.65): the protocol as one more global rule, tools over MCP, both
for one launch through variables; the launch kept out of Cline's background hub.

What Cline reads per launch, found in the pinned CLI (docs/agent-findings-cline.md):

- Hub: after a first run Cline starts a daemon on a fixed port (25463) and later runs
  go through it, which ignores the launch's environment (and is one per machine, so one
  user's daemon would serve another's launch). A launch amux changes anything in sets
  `CLINE_SESSION_BACKEND_MODE=local`: the run is Cline's own process, with this launch's
  variables. Its interactive UI still starts the daemon (detached, with the launch's
  environment) unless it runs in sandbox mode: a launch with memory sets `CLINE_SANDBOX=1`
  with `CLINE_SANDBOX_DATA_DIR` the user's own data directory (so nothing moves), unless
  the user set one of the variables sandbox mode replaces, or the launch has an endpoint
  (sandbox mode would replace its provider file); then a launch that starts the UI warns.
- Instructions: Cline has no flag that adds to its system prompt (`-s` replaces it). It
  collects "rules" into a `# Rules` section, sorted by name: the project's `AGENTS.md`,
  `.clinerules/`, `.cline/rules/`, then the global `~/.agents/AGENTS.md`,
  `<CLINE_DIR>/rules`, `~/Cline/Rules`, `~/Documents/Cline/Rules` and
  `<$OneDrive…>/Documents/Cline/Rules` for each of the variables `OneDrive`,
  `OneDriveConsumer`, `OneDriveCommercial`. The last one is the only rules directory a
  variable adds without taking one of the user's away: amux sets one of them that the
  user has not set to a directory of the session's own holding one rule file
  (`amux-memory-protocol.md`), the protocol, rewritten from the frozen text before every
  launch. Cline reads every user rule itself (amux reads none and changes none); it
  orders rules by name, not by source. A rule file that is a symbolic link is skipped by
  Cline, which is why the user's rules directory cannot be mirrored.
- MCP: `CLINE_MCP_SETTINGS_PATH` names the MCP settings file (default
  `<data dir>/settings/cline_mcp_settings.json`). The launch gets a file of its own (0600,
  in the session's directory) holding the user's servers with `amux` added; the tools
  reach the model as `amux__<tool>`. Cline auto-approves every tool by default
  (`--auto-approve true`); a user's `--auto-approve false` makes it ask, which a headless
  run cannot answer: the launch says so.
- Native memory: Cline 3.0.65 has none (no memory tool, nothing written between
  sessions). Its "memory bank" is a convention of the user's own rules (a rule telling the
  model to keep `memory-bank/*.md` files): a user rule, which amux leaves as it is.
- Sessions: Cline names them (`<ms>_<random>`, in `<data dir>/sessions/<id>/<id>.json`);
  amux learns a new session's id from that file. `--id ID` resumes one, and only in the
  interactive UI (Cline drops the prompt and needs a terminal); the user's `--id` is refused.
- Endpoint: a provider settings file of the launch's own (`CLINE_PROVIDER_SETTINGS_PATH`,
  rewritten by Cline, so a copy in the session's directory) selecting `openai-compatible`
  or `anthropic` with the endpoint's base URL and model; the key by name (Cline reads
  `OPENAI_API_KEY`/`ANTHROPIC_API_KEY`), else a placeholder.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping

from amux.adapters.base import (
    NO_EXIT_MEANINGS,
    NO_KEY,
    NOT_RESUMABLE,
    NOTHING,
    PROMPT,
    AgentRequest,
    Channel,
    EndpointApi,
    EndpointRequest,
    EndpointWiring,
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
    take_option,
    with_endpoint,
)
from amux.envpatch import EnvPatch

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

BACKEND = "CLINE_SESSION_BACKEND_MODE"
MCP_SETTINGS = "CLINE_MCP_SETTINGS_PATH"
PROVIDERS = "CLINE_PROVIDER_SETTINGS_PATH"
RULES_ROOTS = ("OneDriveCommercial", "OneDriveConsumer", "OneDrive")
"""The variables each of which adds `<value>/Documents/Cline/Rules` to Cline's global rules;
amux sets the first one the user has not."""
RULES_DIR = "cline-rules"
"""The launch's own rules root, in the session's directory."""
RULE_FILE = "amux-memory-protocol.md"
MCP_FILE = "cline-mcp.json"
PROVIDERS_FILE = "cline-providers.json"
SANDBOX = "CLINE_SANDBOX"
SANDBOX_DATA = "CLINE_SANDBOX_DATA_DIR"
SANDBOXED = (SANDBOX, "CLINE_DB_DATA_DIR", "CLINE_SESSION_DATA_DIR", "CLINE_TEAM_DATA_DIR",
             PROVIDERS, "CLINE_HOOKS_LOG_PATH")
"""What Cline's sandbox mode sets below its data directory (`CLINE_SANDBOX=1`): a user's own
value of one of them (or their own sandbox) keeps the launch out of it."""
DATA = "data dir"
"""`user_settings`' key for the user's Cline data directory."""
USER_MCP = "mcp"
"""`user_settings`' key for the text of the user's MCP settings file."""
TOOL_PREFIX = "amux__"
ISOLATED = ("CLINE_DIR", "CLINE_DATA_DIR", "CLINE_SESSION_DATA_DIR", "CLINE_DB_DATA_DIR",
            "CLINE_TEAM_DATA_DIR", "CLINE_CONNECTOR_DATA_DIR", "CLINE_TASKS_DB_PATH",
            "CLINE_CRON_DB_PATH", "CLINE_CONNECTORS_DB_PATH", "CLINE_GLOBAL_SETTINGS_PATH",
            "CLINE_CONNECTOR_SETTINGS_PATH", MCP_SETTINGS, PROVIDERS, "CLINE_HOOKS_DIR",
            "CLINE_API_KEY")
"""What points Cline at one user's config, state and credentials: removed in an isolated
run, which then reads the target's `~/.cline`."""
PROVIDER_OF: Mapping[EndpointApi, str] = {"openai": "openai-compatible",
                                          "anthropic": "anthropic"}
KEY_OF: Mapping[EndpointApi, str] = {"openai": "OPENAI_API_KEY",
                                     "anthropic": "ANTHROPIC_API_KEY"}
ENDPOINT_PATHS: Mapping[EndpointApi, str] = {"openai": "/v1", "anthropic": "/v1"}
"""Both providers' `baseUrl` is the API's `/v1` (the AI SDK adds `/chat/completions`,
`/messages`)."""
_VALUE_OPTIONS = frozenset({"--auto-approve", "-c", "--cwd", "--thinking", "--compaction",
                            "--id", "-P", "--provider", "-k", "--key", "-m", "--model", "-s",
                            "--system", "--retries", "-t", "--timeout", "--config",
                            "--data-dir", "--hooks-dir"})
"""Cline 3.0.65's options that take a value (`cline --help`)."""
_TOOL_LINE = re.compile(r"^(\x1b\[[0-9;]*m)?\[[A-Za-z0-9_.-]+\](\x1b\[[0-9;]*m)? ")
"""A tool call's line in Cline's text output (`[amux__memory_search] {…}`, coloured)."""
_NO_UI = frozenset({"-h", "--help", "-V", "--version", "--acp", "--update"})
_UI = frozenset({"-i", "--tui", "--id", "--kanban"})
"""What opens its interactive UI whatever else is given (`--id`: a resumed session)."""
RESUMES_IN_UI = ("Cline resumes a session only in its interactive UI (`--id`), which "
                 "needs a terminal and takes no prompt")
DAEMON = ("Cline's interactive UI starts its background hub daemon (port 25463), which "
          "outlives this launch and serves later Cline runs with this launch's settings; "
          "stop it with `cline doctor fix` after the session")
AUTO_APPROVE_OFF = ("--auto-approve false: Cline asks before every tool call, memory's "
                    "too, and a run without a terminal cannot answer")


def cline_dir(env: Mapping[str, str]) -> str:
    """Cline's own directory: CLINE_DIR, else `~/.cline`."""
    return env.get("CLINE_DIR") or os.path.join(env.get("HOME") or os.path.expanduser("~"),
                                                ".cline")


def data_dir(env: Mapping[str, str]) -> str:
    """Where Cline keeps its state: CLINE_DATA_DIR, else `<Cline's directory>/data`."""
    return env.get("CLINE_DATA_DIR") or os.path.join(cline_dir(env), "data")


def mcp_settings(env: Mapping[str, str]) -> str:
    return env.get(MCP_SETTINGS) or os.path.join(data_dir(env), "settings",
                                                 "cline_mcp_settings.json")


def pick_session(run: FinishedRun) -> tuple[str | None, str | None]:
    """The session Cline wrote in `run`: the one new `<id>/<id>.json`."""
    ids = sorted({os.path.basename(os.path.dirname(file.path)) for file in run.files
                  if os.path.basename(file.path)
                  == os.path.basename(os.path.dirname(file.path)) + ".json"})
    if len(ids) == 1:
        return ids[0], None
    if not ids:
        return None, "Cline started no session in this run" + NOT_RESUMABLE
    return None, f"Cline started {len(ids)} sessions in this run" + NOT_RESUMABLE


def final_answer(stdout: str) -> str:
    """The answer in `cline PROMPT`'s stdout: what follows its last tool call's lines (each
    call a `[tool] {arguments}` line, its result indented after `⎿`)."""
    lines = stdout.splitlines()
    last = max((index for index, line in enumerate(lines)
                if _TOOL_LINE.match(line) or line.lstrip().startswith(("⎿", "\x1b[90m⎿"))),
               default=-1)
    return "\n".join(lines[last + 1:]).strip()


def _servers(text: str | None, where: str) -> dict[str, Any]:
    """The servers of the user's MCP settings (`mcpServers`), {} when there is no file."""
    if text is None or not text.strip():
        return {}
    try:
        value = json.loads(text)
    except ValueError as problem:
        raise PlanRefused(f"cannot read Cline's MCP settings {where}: {problem}; fix the "
                          "file and launch again") from None
    servers = value.get("mcpServers") if isinstance(value, dict) else None
    return dict(servers) if isinstance(servers, dict) else {}


def _endpoint(endpoint: EndpointRequest | None, files_dir: str | None) -> EndpointWiring | None:
    """A provider settings file of this launch selecting the endpoint's provider and model;
    its key from the user's variable by name, else a placeholder (Cline needs one)."""
    if endpoint is None:
        return None
    api = endpoint_api(endpoint, "Cline", ENDPOINT_PATHS,
                       "an OpenAI-compatible (Chat Completions) or Anthropic endpoint")
    if files_dir is None:
        raise PlanRefused("Cline needs the session's directory for its provider settings")
    provider, key = PROVIDER_OF[api], KEY_OF[api]
    path = os.path.join(files_dir, PROVIDERS_FILE)
    settings = {"version": 1, "lastUsedProvider": provider, "providers": {provider: {
        "settings": {"provider": provider, "model": endpoint.model, "baseUrl": endpoint.url},
        "updatedAt": "2026-01-01T00:00:00.000Z", "tokenSource": "manual"}}}
    return EndpointWiring(
        env=EnvPatch({BACKEND: "local", PROVIDERS: path,
                      **({} if endpoint.key_env else {key: NO_KEY})},
                     copy={key: endpoint.key_env} if endpoint.key_env else {}),
        files=(PlanFile(path, json.dumps(settings, indent=2) + "\n"),))


class ClineAdapter:
    name = "cline"
    display_name = "Cline"
    model_api: ModelApi = "chat"
    endpoint_paths = ENDPOINT_PATHS
    prompt_args = (PROMPT,)
    """Its positional prompt (a one-word prompt is taken for an unknown command)."""
    without_terminal: NoTerminal = "fails"
    """"interactive mode requires a TTY", exit 1."""
    first_request: FirstRequest | None = FirstRequest(
        "3.0.65", memory=RequestSize(27068, 6767), plain=RequestSize(21846, 5462))
    key_variables = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")
    instruction_files = ("AGENTS.md", ".clinerules")
    mcp_tool_prefix: str | None = TOOL_PREFIX
    channel: Channel = "mcp"
    tracks_sessions = True
    version_args: tuple[str, ...] | None = ("--version",)
    probe_env = EnvPatch()
    version = first_line_version
    requires = (
        Requirement("flag", "--id", "`amux run --resume` resumes the Cline session"),
        Requirement("env", BACKEND, "the launch runs in Cline's own process, with its own "
                    "variables, not in the shared background hub"),
        Requirement("env", MCP_SETTINGS, "the memory tools reach Cline"),
        Requirement("env", SANDBOX, "Cline's interactive UI starts no background hub daemon "
                    "that would outlive the launch"),
        Requirement("env", SANDBOX_DATA, "Cline's sandbox mode keeps the user's own data"),
        Requirement("env", RULES_ROOTS[0], "the memory protocol reaches Cline as a rule"),
        Requirement("setting", "mcpServers", "the memory tools reach Cline"),
        Requirement("env", PROVIDERS, "`amux run --endpoint` reaches Cline"),
        Requirement("setting", "lastUsedProvider", "`amux run --endpoint` selects the "
                    "endpoint's provider"),
        Requirement("setting", "openai-compatible", "`amux run --endpoint` reaches an "
                    "OpenAI-compatible endpoint"),
        *(Requirement("env", key, "`--endpoint-key-env` gives the endpoint its key")
          for key in KEY_OF.values()),
        *(Requirement("env", name, "an isolated run reads the target's own Cline config and "
                      "state (it is removed)") for name in ISOLATED
          if name not in (MCP_SETTINGS, PROVIDERS)),
    )
    package: str | None = "cline"
    exit_meanings: Mapping[int, str] = NO_EXIT_MEANINGS
    quick_exit_hint = ("configure a provider (`cline auth`), or point it at a model server: "
                       "`amux run --endpoint URL --model NAME cline`; a prompt of one word is "
                       "taken for a command: give a sentence")

    unpacked_code = no_unpacked_code
    quick_exit_cause = no_quick_exit_cause
    kept_session = no_kept_session

    def starts_ui(self, args: tuple[str, ...]) -> bool:
        if has_flag(args, _NO_UI):
            return False
        return has_flag(args, _UI) or first_operand(args, _VALUE_OPTIONS) is None

    def user_instructions(self, args: tuple[str, ...], probe: Probe) -> tuple[str, ...]:
        return ()  # Cline reads AGENTS.md and every rules directory itself

    def user_settings(self, args: tuple[str, ...], probe: Probe) -> Mapping[str, str]:
        """The user's MCP settings file (path, text) and which rules-root variables they set."""
        path = mcp_settings(probe.env)
        try:
            text = probe.read_text(path)
        except (OSError, ValueError) as exc:
            raise PlanRefused(f"cannot read Cline's MCP settings {path}: {exc}") from None
        found = {MCP_SETTINGS: path, **({} if text is None else {USER_MCP: text})}
        found.update({name: "set" for name in RULES_ROOTS if probe.env.get(name)})
        found[DATA] = data_dir(probe.env)
        found.update({name: "set" for name in SANDBOXED if probe.env.get(name)})
        return found

    def isolated_env(self, home: str) -> EnvPatch:
        return EnvPatch(unset=ISOLATED)

    def own_resume(self, ref: str) -> tuple[str, ...] | None:
        return ("--id", ref)

    def new_session_ref(self, session_id: str, state_dir: str) -> str | None:
        return None  # Cline names its sessions; the launcher learns the id after the run

    def session_files(self, env: Mapping[str, str], state_dir: str) -> SessionFiles | None:
        return SessionFiles(os.path.join(data_dir(env), "sessions"), "*.json", pick_session,
                            held=False)

    def headless(self, home: str, scratch: str) -> Headless:
        """`cline PROMPT` (tools auto-approved, its default), its directory in the run's
        home, in its own process (no background hub), no update checks."""
        dot = os.path.join(home, ".cline")
        return Headless((PROMPT,), env=EnvPatch({"CLINE_DIR": dot, BACKEND: "local",
                                                 "CLINE_NO_AUTO_UPDATE": "1",
                                                 "TMPDIR": scratch}),
                        dirs=(dot,), answer=final_answer)

    def plan(self, request: AgentRequest) -> LaunchPlan:
        refuse(request.args, ("--id",), "Cline")
        args = list(request.args)
        ref = request.agent_session
        warnings: list[str] = []
        if request.resume and ref is not None:
            args = ["--id", ref, *args]
            if not self.starts_ui(tuple(request.args)):
                warnings.append(RESUMES_IN_UI + ": the arguments after `--` are not a prompt "
                                "there")
        endpoint = _endpoint(request.endpoint, request.files_dir)
        memory = request.memory
        if memory is None:  # Cline as it is
            if endpoint is not None and self.starts_ui(tuple(args)):
                warnings.append(DAEMON)  # its local backend does not keep the UI's away
            plan = LaunchPlan((request.executable, *args), agent_session=ref,
                              warnings=tuple(warnings))
            return with_endpoint(plan, endpoint)
        if request.files_dir is None:
            raise PlanRefused("Cline needs the session's directory for its rule and MCP "
                              "settings files")
        found = request.user_settings or NOTHING
        free = [name for name in RULES_ROOTS if name not in found]
        if not free:
            raise PlanRefused(f"{', '.join(RULES_ROOTS)} are all set: Cline would take no "
                              "rules directory of amux's; unset one of them for this launch")
        instructions = request.frozen_instructions or memory.protocol
        servers = _servers(found.get(USER_MCP), found.get(MCP_SETTINGS, MCP_SETTINGS))
        servers["amux"] = {"command": memory.mcp_command[0], "args": list(memory.mcp_command[1:]),
                           "env": dict(memory.env), "disabled": False}
        root = os.path.join(request.files_dir, RULES_DIR)
        rule = os.path.join(root, "Documents", "Cline", "Rules", RULE_FILE)
        mcp = os.path.join(request.files_dir, MCP_FILE)
        env = {BACKEND: "local", MCP_SETTINGS: mcp, free[0]: root}
        if request.endpoint is None and not any(name in found for name in SANDBOXED):
            # its UI starts no hub daemon in sandbox mode, whose data is the user's own
            env.update({SANDBOX: "1", SANDBOX_DATA: found.get(DATA) or data_dir({})})
        elif self.starts_ui(tuple(args)):
            warnings.append(DAEMON)
        _, approve = take_option(request.args, ("--auto-approve",))
        if approve and approve[-1].strip().lower() == "false":
            warnings.append(AUTO_APPROVE_OFF)
        plan = LaunchPlan(
            (request.executable, *args),
            env=EnvPatch(env),
            channel="mcp", instructions=instructions, agent_session=ref,
            warnings=tuple(warnings),
            files=(PlanFile(rule, instructions),
                   PlanFile(mcp, json.dumps({"mcpServers": servers}, indent=2,
                                            sort_keys=True) + "\n",
                            private=USER_MCP in found)))
        return with_endpoint(plan, endpoint)
