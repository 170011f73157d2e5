"""GitHub Copilot CLI (`copilot`, `@github/copilot` 1.0.102): memory over MCP, per launch.

What Copilot 1.0.102 reads (docs/agent-findings-copilot.md, every point from the real CLI
against the scripted model) and how each is handled:

- **Instructions.** No flag adds to its system prompt. It puts in it, after its own text,
  `$COPILOT_HOME/copilot-instructions.md`, the repository's `.github/copilot-instructions.md`,
  `AGENTS.md`, `CLAUDE.md`, `GEMINI.md`, then every `*.instructions.md` of the user's
  `~/.copilot/instructions/`, the repository's `.github/instructions/` and, last, of each
  directory in `COPILOT_CUSTOM_INSTRUCTIONS_DIRS` (comma-separated, in order; walked at any
  depth, the file's text without a path header). So the protocol alone is the file
  `amux.instructions.md` in the session's own directory (`request.files_dir`, which holds no
  other `*.instructions.md`), rewritten from the frozen text before every launch (Copilot
  rebuilds its prompt from the files at each launch), and that directory is appended last
  to the user's own `COPILOT_CUSTOM_INSTRUCTIONS_DIRS` (read at every launch by
  `user_settings`). Copilot reads the user's files itself, before it: amux reads none of
  them, and the merged text is the protocol alone. The user's `--no-custom-instructions`
  would drop it too: refused with memory.
- **Memory tools.** `--additional-mcp-config=@<session dir>/copilot-mcp.json` (this launch
  only, beside the user's `~/.copilot/mcp-config.json`, which is never written) with the
  server `amux` whose environment is only the connection config's path (the token stays in
  its 0600 file) and `disableToolCache` (else Copilot keeps its tool list in
  `~/.cache/copilot/mcp-tools/`, keyed on the entry: a new file every session). Copilot
  names its tools `amux-memory_search`, …, sent with their schemas in the first request.
  In `-p` a tool needing approval is denied, so `--allow-tool=amux(memory_search),…`
  allows exactly the five amux tools. A user's own server named `amux` is replaced for the
  launch; their `--deny-tool` matching them wins, and their `--available-tools` list hides
  them unless it names them (a warning says so).
- **Native memory.** Copilot Memory is GitHub's cloud service, reached through the tools
  `store_memory` and `vote_memory` of a signed-in, entitled account; `-p` leaves it off unless
  `--enable-memory`, interactive sessions keep it. Every launch with memory passes
  `--excluded-tools=store_memory,vote_memory` (Copilot unions repeated `--excluded-tools`,
  so the user's own list stays theirs and applies too), and the user's `--enable-memory` is
  refused. What cannot be promised, said once per session at launch (`LIMITS`): these tools
  are never offered without a GitHub login, so their removal could not be observed here, nor
  whether memories GitHub already keeps reach the prompt some other way. `session_store_sql`
  (a read-only SQL view of this machine's own Copilot session history, on by default) is
  kept: it stores nothing, it is the user's own transcripts (as an agent may read any file
  it can), and excluding it prints "● Disabled tools: session_store_sql" on stdout before
  every `-p` answer.
- **Sessions.** `--session-id=<uuid>` chooses the id up front (derived from the amux id),
  `--resume=<uuid>` resumes it (with the same instructions directory the system prompt is
  byte for byte the first one); Copilot keeps `$COPILOT_HOME/session-state/<uuid>/events.jsonl`
  (`kept_session`). The user's `-r/--resume`, `--continue`, `--session-id`,
  `--new-session-id` and `--connect` are refused, and `--config-dir` (sessions elsewhere:
  use `COPILOT_HOME`) and `--acp` (sessions driven by another client). No ephemeral mode.
- **Endpoint.** BYOK: `COPILOT_PROVIDER_BASE_URL`, `COPILOT_PROVIDER_TYPE` (`openai` with
  `COPILOT_PROVIDER_WIRE_API=completions`, or `anthropic`, whose base is the API root),
  `COPILOT_MODEL`, the key as `COPILOT_PROVIDER_API_KEY` copied from the named variable;
  the user's other provider settings and GitHub tokens removed (a classic `ghp_` token
  fails every run, a fine-grained one adds ~20 s of GitHub calls; neither is the
  endpoint's), and `--no-auto-update` (no update check, and the version `amux doctor`
  checked is the one that runs).
- The executable unpacks its code (235 MB) into a package cache on first start
  (`unpacked_code` names where, for `amux doctor`).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping

from amux.adapters.base import (
    MEMORY_TOOLS,
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
    first_operand,
    has_flag,
    no_quick_exit_cause,
    no_session_files,
    refuse,
    with_endpoint,
)
from amux.envpatch import EnvPatch

_NAMESPACE = "0c6b1f5e-3d2a-4a8e-9f4b-2c7d5e9a0103"
"""uuid5 namespace of the Copilot session ids amux chooses (a fixed, arbitrary UUID)."""
INSTRUCTIONS_FILE = "amux.instructions.md"
MCP_FILE = "copilot-mcp.json"
DIRS = "COPILOT_CUSTOM_INSTRUCTIONS_DIRS"
TOOLS = tuple(f"amux-{tool}" for tool in MEMORY_TOOLS)
"""The memory tools as Copilot's model sees them (`<server>-<tool>`)."""
ALLOW = "--allow-tool=" + ",".join(f"amux({tool})" for tool in MEMORY_TOOLS)
NATIVE_TOOLS = ("store_memory", "vote_memory")
EXCLUDE = "--excluded-tools=" + ",".join(NATIVE_TOOLS)
LIMITS = ("Copilot CLI: its own memory (store_memory, vote_memory: GitHub's Copilot Memory, "
          "for a signed-in account) is excluded from this launch's tools; amux could not check "
          "that against a signed-in account, nor whether memories GitHub already keeps still "
          "reach the prompt")
PROVIDER = ("COPILOT_PROVIDER_BASE_URL", "COPILOT_PROVIDER_TYPE", "COPILOT_PROVIDER_WIRE_API",
            "COPILOT_PROVIDER_API_KEY", "COPILOT_PROVIDER_API_KEY_COMMAND",
            "COPILOT_PROVIDER_BEARER_TOKEN", "COPILOT_PROVIDER_HEADERS",
            "COPILOT_PROVIDER_TRANSPORT", "COPILOT_PROVIDER_MODEL_ID",
            "COPILOT_PROVIDER_WIRE_MODEL", "COPILOT_PROVIDER_MAX_PROMPT_TOKENS",
            "COPILOT_PROVIDER_MAX_OUTPUT_TOKENS")
"""Every variable of Copilot's custom provider (`copilot help providers`)."""
GITHUB_TOKENS = ("COPILOT_GITHUB_TOKEN", "GH_TOKEN", "GITHUB_TOKEN")
_LAUNCHER_ONLY = ("COPILOT_HOME", "COPILOT_CACHE_HOME", "COPILOT_PKG_CACHE_HOME", DIRS,
                  "COPILOT_MODEL", "COPILOT_ALLOW_ALL", *PROVIDER)
"""The launching service's Copilot home, caches, instructions, model, permissions and
provider: never an isolated run's (its tokens are dropped as every credential is)."""
_VALUE_OPTIONS = frozenset({"-i", "--interactive", "-p", "--prompt", "--model",
                            "--reasoning-effort", "--context", "--auto-tier", "--agent", "-n",
                            "--name", "-C", "--log-dir", "--extension-sdk-path", "--log-level",
                            "--stream", "--output-format", "--add-dir", "--attachment",
                            "--disable-mcp-server", "--enable-mcp-server",
                            "--add-github-mcp-toolset", "--add-github-mcp-tool", "--plugin-dir",
                            "--additional-mcp-config", "--mcp-github-auth", "--mode",
                            "--max-autopilot-continues", "--environment-host",
                            "--environment-compute-id", "--dynamic-retrieval",
                            "--max-ai-credits", "--usage-output-file"})
"""Copilot 1.0.102's options that take one value (`copilot --help`)."""
_VERSION = re.compile(r"\d+\.\d+\.\d+(?:-[\w.]*\w)?")
ENDPOINT_PATHS: Mapping[EndpointApi, str] = {"openai": "/v1", "anthropic": ""}
"""COPILOT_PROVIDER_BASE_URL: the OpenAI API's `/v1` (Copilot adds `/chat/completions`), or
the Anthropic server's root (it adds `/v1/messages`)."""
_NO_UI = frozenset({"-p", "--prompt", "-i", "--interactive", "--acp", "-h", "--help", "-v",
                    "--version"})


def copilot_home(env: Mapping[str, str]) -> str:
    """Where Copilot keeps its config and sessions: COPILOT_HOME, else ~/.copilot."""
    return env.get("COPILOT_HOME") or os.path.join(
        env.get("HOME") or os.path.expanduser("~"), ".copilot")


def instruction_dirs(theirs: str | None, ours: str) -> str:
    """`COPILOT_CUSTOM_INSTRUCTIONS_DIRS`: the user's directories first, in their order,
    then ours."""
    kept = [part for part in (theirs or "").split(",") if part.strip()]
    return ",".join([*kept, ours])


def _endpoint(endpoint: EndpointRequest | None) -> EndpointWiring | None:
    if endpoint is None:
        return None
    api = endpoint_api(endpoint, "Copilot CLI", ENDPOINT_PATHS,
                       "an OpenAI-compatible (Chat Completions) or Anthropic endpoint")
    env = {"COPILOT_PROVIDER_BASE_URL": endpoint.url, "COPILOT_PROVIDER_TYPE": api,
           "COPILOT_MODEL": endpoint.model}
    if api == "openai":
        env["COPILOT_PROVIDER_WIRE_API"] = "completions"
    key = "COPILOT_PROVIDER_API_KEY"
    if endpoint.key_env is None:
        env[key] = NO_KEY
    unset = tuple(name for name in (*PROVIDER, *GITHUB_TOKENS) if name not in env
                  and not (name == key and endpoint.key_env))
    return EndpointWiring(args=("--no-auto-update",), env=EnvPatch(
        env, unset, copy={key: endpoint.key_env} if endpoint.key_env else {}))


def quiet_answer(stdout: str) -> str:
    """The answer in `copilot -p -s` output: without the line Copilot prints first when a
    tool present in the session was excluded."""
    lines = stdout.strip().splitlines()
    if lines and lines[0].startswith("● Disabled tools:"):
        lines = lines[1:]
    return "\n".join(lines).strip()


class CopilotAdapter:
    name = "copilot"
    display_name = "Copilot CLI"
    model_api: ModelApi = "chat"
    endpoint_paths = ENDPOINT_PATHS
    prompt_args = ("-p", PROMPT)
    without_terminal: NoTerminal = "fails"
    """It reads a prompt from stdin, and exits 1 at once when none comes ("No prompt
    provided"); `-i PROMPT` without a terminal runs like `-p`."""
    first_request: FirstRequest | None = FirstRequest(
        "1.0.102", memory=RequestSize(54488, 13622), plain=RequestSize(49268, 12317))
    key_variables = ("COPILOT_PROVIDER_API_KEY",)
    instruction_files = ("AGENTS.md", "CLAUDE.md", "GEMINI.md")
    mcp_tool_prefix: str | None = "amux-"
    channel: Channel = "mcp"
    tracks_sessions = True
    version_args: tuple[str, ...] | None = ("--version",)
    probe_env = EnvPatch()
    requires = (
        *chosen_session("--session-id", "--resume"),
        Requirement("flag", "--additional-mcp-config", "the memory tools reach Copilot"),
        Requirement("flag", "--allow-tool", "the memory tools run without a prompt (denied "
                    "in -p otherwise)"),
        Requirement("flag", "--excluded-tools", "Copilot's own memory tools are removed"),
        Requirement("flag", "--no-auto-update", "an `--endpoint` launch makes no update "
                    "check and runs the version doctor checked"),
        Requirement("setting", "mcpServers", "the memory tools reach Copilot"),
        Requirement("setting", "disableToolCache", "a launch leaves no tool list of its own "
                    "in ~/.cache/copilot/mcp-tools (one file per session otherwise)"),
        Requirement("setting", "store_memory", "Copilot's own memory tool is the one "
                    "excluded"),
        Requirement("env", DIRS, "the memory protocol reaches Copilot's system prompt"),
        Requirement("env", "COPILOT_MODEL", "`amux run --model` is the model Copilot uses"),
        *(Requirement("env", name, "`amux run --endpoint` reaches Copilot, with only its own "
                      "provider settings") for name in PROVIDER),
        *(Requirement("env", name, "an `--endpoint` launch does not try GitHub with the "
                      "user's token (a classic token fails every run)")
          for name in GITHUB_TOKENS),
        *(Requirement("env", name, "an isolated run reads the target's own Copilot home, "
                      "cache and settings (it is removed)")
          for name in ("COPILOT_HOME", "COPILOT_CACHE_HOME", "COPILOT_PKG_CACHE_HOME",
                       "COPILOT_ALLOW_ALL")),
    )
    package: str | None = "@github/copilot"
    exit_meanings: Mapping[int, str] = NO_EXIT_MEANINGS
    quick_exit_hint = ("log in (`copilot`, then /login, or set COPILOT_GITHUB_TOKEN to a "
                       "fine-grained token; classic ghp_ tokens are refused), or point it at a "
                       "model server: `amux run --endpoint URL --model NAME copilot`")

    def version(self, status: int, stdout: str, stderr: str) -> str | None:
        """`GitHub Copilot CLI 1.0.102.` → `1.0.102`."""
        lines = stdout.strip().splitlines()
        found = _VERSION.search(lines[0]) if status == 0 and lines else None
        return found.group(0) if found else None

    quick_exit_cause = no_quick_exit_cause

    def starts_ui(self, args: tuple[str, ...]) -> bool:
        """No prompt (`-p`, `-i`) and no subcommand."""
        return not has_flag(args, _NO_UI) and first_operand(args, _VALUE_OPTIONS) is None

    def user_instructions(self, args: tuple[str, ...], probe: Probe) -> tuple[str, ...]:
        return ()  # Copilot reads AGENTS.md, its instruction files and directories itself

    def user_settings(self, args: tuple[str, ...], probe: Probe) -> Mapping[str, str]:
        """The user's own `COPILOT_CUSTOM_INSTRUCTIONS_DIRS`, which amux's directory joins."""
        value = probe.env.get(DIRS)
        return {DIRS: value} if value else NOTHING

    def isolated_env(self, home: str) -> EnvPatch:
        return EnvPatch(unset=_LAUNCHER_ONLY)

    session_files = no_session_files

    def kept_session(self, ref: str, env: Mapping[str, str]) -> tuple[str, str] | None:
        """`$COPILOT_HOME/session-state/<id>/events.jsonl`."""
        return os.path.join(copilot_home(env), "session-state", ref), "events.jsonl"

    def own_resume(self, ref: str) -> tuple[str, ...] | None:
        return (f"--resume={ref}",)

    def new_session_ref(self, session_id: str, state_dir: str) -> str | None:
        return chosen_uuid(_NAMESPACE, session_id)

    def unpacked_code(self, env: Mapping[str, str], version: str | None) -> tuple[str, ...]:
        """Where the executable unpacks the package of `version` (its JavaScript and native
        module, which hold the variables and settings): glob patterns, in Copilot's order
        of package caches (`sea-loader.js`), for `amux doctor`."""
        if not version:
            return ()
        home = env.get("HOME") or os.path.expanduser("~")
        cache = env.get("XDG_CACHE_HOME") or os.path.join(home, ".cache")
        roots = [env[name] + "/pkg" for name in ("COPILOT_PKG_CACHE_HOME", "COPILOT_CACHE_HOME")
                 if env.get(name)]
        roots += [os.path.join(cache, "copilot", "pkg"),
                  os.path.join(copilot_home(env), "pkg")]
        return tuple(os.path.join(root, "*", version) for root in dict.fromkeys(roots))

    def headless(self, home: str, scratch: str) -> Headless:
        """`copilot -p … -s --allow-tool=write` (file edits allowed, as a user approving
        them would; `-s`: the answer alone on stdout), its home under `home`."""
        config = os.path.join(home, ".copilot")
        return Headless(("-p", PROMPT, "-s", "--allow-tool=write"),
                        env=EnvPatch({"COPILOT_HOME": config, "COPILOT_AUTO_UPDATE": "false"}),
                        dirs=(config,), answer=quiet_answer, limits=(LIMITS,))

    def plan(self, request: AgentRequest) -> LaunchPlan:
        refuse(request.args, ("-r", "--resume", "--continue", "--session-id",
                              "--new-session-id", "--connect"), "Copilot CLI")
        given = {arg.partition("=")[0] for arg in request.args}
        if "--config-dir" in given:
            raise PlanRefused("--config-dir moves Copilot's sessions where amux does not look "
                              "for them; set COPILOT_HOME instead")
        if "--acp" in given:
            raise PlanRefused("--acp makes Copilot a server whose sessions another client "
                              "drives, which amux cannot resume; run Copilot itself")
        ref = request.agent_session
        session = ([] if ref is None else
                   [f"--resume={ref}"] if request.resume else [f"--session-id={ref}"])
        memory = request.memory
        endpoint = _endpoint(request.endpoint)
        if memory is None:  # Copilot as it is; only the session id added
            return with_endpoint(LaunchPlan((request.executable, *session, *request.args),
                                            agent_session=ref), endpoint)
        for flag, why in (("--enable-memory", "would turn on Copilot's own memory, which "
                           "amux memory replaces in this session"),
                          ("--no-custom-instructions", "would drop the memory protocol with "
                           "the other instructions")):
            if flag in given:
                raise PlanRefused(f"{flag} {why}; leave it out, or switch amux memory off "
                                  "for this run")
        if request.files_dir is None:
            raise PlanRefused("Copilot's instructions need the session's directory")
        instructions = request.frozen_instructions or memory.protocol
        server = {"command": memory.mcp_command[0], "args": list(memory.mcp_command[1:]),
                  "env": dict(memory.env), "disableToolCache": True}
        mcp = os.path.join(request.files_dir, MCP_FILE)
        files = (PlanFile(os.path.join(request.files_dir, INSTRUCTIONS_FILE), instructions),
                 PlanFile(mcp, json.dumps({"mcpServers": {"amux": server}}, indent=2) + "\n"))
        env = {DIRS: instruction_dirs(request.user_settings.get(DIRS), request.files_dir)}
        warnings = [] if request.resume else [LIMITS]
        if given & {"--deny-tool", "--available-tools", "--disable-mcp-server"}:
            warnings.append("Copilot CLI: your --deny-tool, --available-tools or "
                            "--disable-mcp-server can keep the memory tools (amux-memory_search, "
                            "…) from running or from the model")
        argv = (request.executable, *session, f"--additional-mcp-config=@{mcp}", ALLOW,
                EXCLUDE, *request.args)
        return with_endpoint(LaunchPlan(
            argv, env=EnvPatch(env), channel="mcp", instructions=instructions,
            suppression={"argv": [EXCLUDE]}, agent_session=ref, warnings=tuple(warnings),
            files=files), endpoint)
