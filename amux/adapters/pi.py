"""Pi (`pi`): two routes, chosen by the version the launcher learns (`channel_of`).

Pi from 0.99.0 (`@earendil-works/pi-coding-agent`, pinned 1.6.0) has MCP: the MCP
protocol and the memory tools, declared to the model like every other agent's, through
one extension (`--extension`, `MCP_EXTENSION`, the same for every launch) reading what this
launch adds from a file in the session's own directory (`AMUX_PI_LAUNCH`). It
registers the stdio server `amux` with `exposure: "direct"` (`pi.registerMcpServer`: the
user's `mcp.json` servers keep their own exposure, `codemode` by default; a server of
theirs named `amux` wins, as Pi lets a file's server win) and, in `before_agent_start`,
puts the frozen text where `--append-system-prompt` puts it (`systemPromptOptions.
appendSystemPrompt`, Pi's `<addendum>`): after what Pi itself appends (its
`APPEND_SYSTEM.md`, the project's only when Pi trusts the project), or, when the user gave
`--append-system-prompt`, in place of it with their values (taken out of argv, read as Pi
reads them, frozen with the protocol), as the flag replaces Pi's discovery. Pi's own
discovery, trust and context files are left to Pi. Sessions: `--session-id ID` (a UUID
chosen up front from the session's own file name), the same to resume.

Older Pi (the `@mariozechner` package, up to 0.73.1) has no MCP and no
`--session-id`: the command-line route below, unchanged. Pi has no built-in long-term
memory in either (1.6.0's built-in extensions are `mcp`, `codemode`, `tool-search` and
`llama.cpp`, and it ships no skills; third-party memory extensions are not evaluated), so
nothing is suppressed.

The command-line route: the protocol names `amux memory …` commands and the launcher
puts a directory holding only `amux` first on PATH, with the connection in the
environment.

Instructions (as Pi 0.73.1 reads them, `core/resource-loader.js`): any
`--append-system-prompt` replaces Pi's own discovery, so amux's one flag would
drop the user's text unless amux merges it first. `user_instructions` therefore
computes what Pi would have appended: every `--append-system-prompt VALUE` (only
that form; Pi refuses `--append-system-prompt=VALUE`), VALUE being the text of
the file it names relative to cwd if there is one, else VALUE itself, joined with
a blank line as Pi joins them; without the flag, the first of
`<cwd>/.pi/APPEND_SYSTEM.md` and `$PI_CODING_AGENT_DIR/APPEND_SYSTEM.md`
(`~/.pi/agent` by default), only the first found, as Pi does. The protocol comes
after it. The merged text goes to Pi as a file, `--append-system-prompt FILE`
(0600 in the session's own directory, rewritten from the frozen text before every
launch): out of `ps` and of the 128 KiB limit of one argument.

Sessions: `--session FILE` chosen up front, the same file to resume (a session started so
resumes so on any Pi). `--no-session`
is Pi's ephemeral mode and is passed through: no `--session` then, Pi writes no
session file, and the amux session is recorded as not resumable. The user's own
`--session`, `--session-id`, `--continue`, `--resume`, `--fork` and `--session-dir` are
refused.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping

from amux.adapters.base import (
    ENDPOINT_PROVIDER,
    NO_EXIT_MEANINGS,
    NO_KEY,
    PROMPT,
    AgentRequest,
    Channel,
    EndpointApi,
    EndpointRefused,
    EndpointWiring,
    FirstRequest,
    Headless,
    LaunchPlan,
    Memory,
    ModelApi,
    NoTerminal,
    PlanFile,
    PlanRefused,
    Probe,
    RequestSize,
    Requirement,
    ResumeFlagRefused,
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
    no_user_settings,
    refuse,
    with_endpoint,
)
from amux.envpatch import EnvPatch

APPEND = "--append-system-prompt"
INSTRUCTIONS_FILE = "pi-append-system.md"
"""The merged text, in the session's own directory, named by amux's one `--append-system-prompt`."""
EPHEMERAL = ("started with Pi's --no-session, an ephemeral session: Pi kept nothing to "
             "resume")
_VALUE_OPTIONS = frozenset({
    "--mode", "--provider", "--model", "--api-key", "--system-prompt", APPEND, "--session",
    "--fork", "--session-dir", "--models", "--tools", "-t", "--thinking", "--export",
    "--extension", "-e", "--skill", "--prompt-template", "--theme",
    # Pi 1.x
    "--session-id", "--name", "-n", "--exclude-tools", "-xt", "--use-theme", "--tui-mode"})
"""Pi's options that take the next argument as their value (`cli/args.js`)."""
MCP_VERSION = "0.99.0"
MCP_SINCE = (0, 99, 0)
"""The first Pi with MCP and `pi.registerMcpServer` (its CHANGELOG)."""
ENV_SYNTAX_SINCE = (0, 77, 0)
"""The first Pi that reads a provider's `apiKey` as a literal unless it says `${NAME}`
(its CHANGELOG); before it, a plain name of a variable that is set was its value."""
MCP_FILE = "pi-amux.js"
"""The extension of every launch on the MCP route, in the amux home (`MCP_EXTENSION`)."""
LAUNCH_FILE = "pi-amux.json"
"""What one launch on the MCP route adds, in the session's own directory."""
SESSION_NAMESPACE = "5b0c7a46-3c4f-5d8e-9a51-6f2e0d7c1b94"
"""The UUID namespace of the Pi session ids amux chooses (`chosen_uuid`)."""
NO_MCP = ("--no-mcp", "--no-extensions", "-ne")
"""The user's options that leave Pi without MCP support (`-ne` turns its built-in `mcp`
extension off), so without the memory tools."""


def version_tuple(version: str | None) -> tuple[int, ...] | None:
    """`1.6.0` → (1, 6, 0); None when it does not start with a dotted number."""
    head = (version or "").strip().lstrip("v").split("-")[0].split("+")[0]
    parts = head.split(".")
    return tuple(int(part) for part in parts) if all(p.isdigit() for p in parts) else None


def _at_least(version: str | None, since: tuple[int, ...]) -> bool:
    found = version_tuple(version)
    return found is not None and found >= since


def has_mcp(version: str | None) -> bool:
    """Whether a Pi of `version` has MCP (an unknown version: no, the route every Pi runs)."""
    return _at_least(version, MCP_SINCE)


def _options(args: tuple[str, ...]) -> tuple[list[str], list[str], bool]:
    """(args without `--append-system-prompt VALUE`, those values, whether `--no-session`
    is given), read the way Pi's parser reads them: an option's value is never a flag."""
    rest: list[str] = []
    appended: list[str] = []
    no_session = False
    index = 0
    while index < len(args):
        arg = args[index]
        if arg in _VALUE_OPTIONS and index + 1 < len(args):
            if arg == APPEND:
                appended.append(args[index + 1])
            else:
                rest += args[index:index + 2]
            index += 2
            continue
        no_session = no_session or arg == "--no-session"
        rest.append(arg)
        index += 1
    return rest, appended, no_session


def _flag_text(probe: Probe, value: str) -> str:
    """An `--append-system-prompt` value as Pi reads it: the named file's text, else the
    value (also when the file cannot be read, where Pi warns)."""
    path = os.path.join(probe.cwd, value)
    try:
        text = probe.read_text(path)
    except UnicodeDecodeError as exc:
        raise PlanRefused(f"cannot read {path} (named by Pi's {APPEND}): {exc}") from None
    except (OSError, ValueError):  # ValueError: a NUL byte, never a file name
        return value
    return value if text is None else text


def _discovered(probe: Probe) -> str | None:
    """The first of the project's and the user's `APPEND_SYSTEM.md`, as Pi finds it."""
    agent_dir = probe.env.get("PI_CODING_AGENT_DIR")
    home = probe.env.get("HOME") or os.path.expanduser("~")
    if agent_dir:
        if agent_dir == "~" or agent_dir.startswith("~/"):
            agent_dir = home + agent_dir[1:]
    else:
        agent_dir = os.path.join(home, ".pi", "agent")
    for path in (os.path.join(probe.cwd, ".pi", "APPEND_SYSTEM.md"),
                 os.path.join(agent_dir, "APPEND_SYSTEM.md")):
        try:
            text = probe.read_text(path)
        except NotADirectoryError:
            continue
        except (OSError, ValueError) as exc:
            raise PlanRefused(f"cannot read Pi's {path}: {exc}") from None
        if text is not None:
            return text
    return None


MCP_EXTENSION = """\
// amux run: the memory tools and instructions of a Pi launched by amux (written by amux,
// the same text for every launch). What one launch adds is in the file AMUX_PI_LAUNCH names.
import { readFileSync } from "node:fs";

export default function (pi) {
  const path = process.env.AMUX_PI_LAUNCH;
  if (!path) return;
  const launch = JSON.parse(readFileSync(path, "utf8"));
  pi.registerMcpServer("amux", launch.server);
  pi.on("before_agent_start", (event) => {
    const options = event.systemPromptOptions;
    options.appendSystemPrompt = launch.replace || !options.appendSystemPrompt
      ? launch.text : `${options.appendSystemPrompt}\\n\\n${launch.text}`;
  });
}
"""
"""The extension of every launch on the MCP route (module doc): one text at one path per
amux home, so Pi's extension loader (jiti) compiles it once and finds it in its cache
(`/tmp/jiti`, by path and text) at every later launch; a new file per session cost each
launch about 125 ms and left a compiled copy behind. The launch's own data (the server,
the frozen text, whether it replaces Pi's) is a JSON file in the session's directory."""
LAUNCH_VARIABLE = "AMUX_PI_LAUNCH"


def _launch_data(memory: Memory, text: str, replace: bool) -> str:
    server = {"command": memory.mcp_command[0], "args": list(memory.mcp_command[1:]),
              "env": dict(memory.env), "exposure": "direct",
              "description": "amux shared memory"}
    return json.dumps({"server": server, "text": text, "replace": replace}, indent=1,
                      sort_keys=True) + "\n"


ENDPOINT_FILE = "pi-endpoint.js"
"""The extension of an `--endpoint` launch, in the session's own directory."""
_PI_API = {"openai": "openai-completions", "anthropic": "anthropic-messages"}
ENDPOINT_PATHS: Mapping[EndpointApi, str] = {"openai": "/v1", "anthropic": ""}
"""The provider's `baseUrl`: the OpenAI API's `/v1` (Pi adds `/chat/completions`), or the
Anthropic server's root (it adds `/v1/messages`)."""
_NO_UI = frozenset({"-p", "--print", "--mode", "-h", "--help", "-v", "--version",
                    "--list-models", "--export"})
"""Pi 0.73.1's options that run without its UI (`pi --help`); a message or a subcommand
(`install`, `config`, …) in place of them runs without it too when stdin is no terminal."""


def _endpoint(request: AgentRequest) -> EndpointWiring | None:
    """A provider of this launch only: Pi reads providers from its own `models.json`,
    which amux must not edit, so an extension file given with `--extension` registers
    it (Chat Completions or Anthropic Messages) and `--model` names its model. The key
    is read by Pi from the named variable (`${NAME}` from Pi 0.77.0 on, the bare name
    before it); without one a placeholder."""
    endpoint = request.endpoint
    if endpoint is None:
        return None
    if request.files_dir is None:
        raise EndpointRefused("--endpoint needs the session's directory for Pi's extension")
    api = endpoint_api(endpoint, "Pi", ENDPOINT_PATHS, "an OpenAI- or "
                       "Anthropic-compatible endpoint")
    model = {"id": endpoint.model, "name": endpoint.model, "reasoning": False,
             "input": ["text"], "contextWindow": 128000, "maxTokens": 16384,
             "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}}
    key = endpoint.key_env
    if key and _at_least(request.version, ENV_SYNTAX_SINCE):
        key = "${" + key + "}"  # a plain string is a literal key there
    config = {"name": "amux run --endpoint", "baseUrl": endpoint.url, "api": _PI_API[api],
              "apiKey": key or NO_KEY, "models": [model]}
    # JSON with every non-ASCII character escaped is a JavaScript literal.
    text = ("// amux run --endpoint: this launch's provider (written by amux, for this "
            "session only)\n"
            f"export default function (pi) {{\n  pi.registerProvider("
            f"{json.dumps(ENDPOINT_PROVIDER)}, {json.dumps(config, sort_keys=True)});\n}}\n")
    path = os.path.join(request.files_dir, ENDPOINT_FILE)
    return EndpointWiring(args=("--extension", path, "--model",
                                f"{ENDPOINT_PROVIDER}/{endpoint.model}"),
                          files=(PlanFile(path, text),))


class PiAdapter:
    name = "pi"
    display_name = "Pi"
    model_api: ModelApi = "chat"
    endpoint_paths = ENDPOINT_PATHS
    prompt_args = ("-p", PROMPT)
    without_terminal: NoTerminal = "ends"
    """It reads a prompt from stdin, and exits 0 with no output when none comes."""
    first_request: FirstRequest | None = FirstRequest(
        "1.6.0", memory=RequestSize(10943, 2736), plain=RequestSize(5693, 1424))
    key_variables = ("OPENAI_API_KEY",)
    instruction_files = ("AGENTS.md", "CLAUDE.md")
    mcp_tool_prefix: str | None = None  # the CLI channel: `amux memory …` in its bash tool
    channel: Channel = "cli"
    tracks_sessions = True
    version_args: tuple[str, ...] | None = ("--version",)
    probe_env = EnvPatch()
    version = first_line_version
    requires = (
        Requirement("flag", "--session", "the session file is chosen up front, so it can be "
                    "resumed"),
        Requirement("flag", APPEND, "the memory protocol reaches Pi"),
        Requirement("env", "PI_CODING_AGENT_DIR", "an isolated run reads the target user's "
                    "config"),
        Requirement("flag", "--extension", "`amux run --endpoint` reaches Pi (as a provider "
                    "an extension of that launch registers)"),
        Requirement("flag", "--model", "`amux run --model` is the model Pi uses"),
        Requirement("setting", "registerProvider", "`amux run --endpoint` reaches Pi"),
        # Pi's MCP route (0.99.0 on)
        Requirement("flag", "--session-id", "a new session's id is chosen up front, so it "
                    "can be resumed", since=MCP_VERSION),
        Requirement("setting", "registerMcpServer", "the memory tools reach Pi (a server of "
                    "the launch, exposed directly)", since=MCP_VERSION),
        Requirement("setting", "systemPromptOptions", "the memory protocol reaches Pi's "
                    "system prompt after the user's own", since=MCP_VERSION),
    )
    package: str | None = "@earendil-works/pi-coding-agent"
    exit_meanings: Mapping[int, str] = NO_EXIT_MEANINGS
    quick_exit_hint = ("set the key of its provider (e.g. ANTHROPIC_API_KEY, or `pi` then "
                       "/login), or point it at a model server: `amux run --endpoint URL "
                       "--model NAME pi`")

    def user_instructions(self, args: tuple[str, ...], probe: Probe) -> tuple[str, ...]:
        """What Pi itself would append to its system prompt, as one text (module doc)."""
        _, values, _ = _options(args)
        if values:
            texts = [_flag_text(probe, value) for value in values if value]
        else:
            found = _discovered(probe)
            texts = [] if found is None else [found]
        joined = "\n\n".join(texts)
        return (joined,) if joined else ()

    quick_exit_cause = no_quick_exit_cause

    def starts_ui(self, args: tuple[str, ...]) -> bool:
        return not has_flag(args, _NO_UI) and first_operand(args, _VALUE_OPTIONS) is None

    def isolated_env(self, home: str) -> EnvPatch:
        return EnvPatch({"PI_CODING_AGENT_DIR": os.path.join(home, ".pi", "agent")})

    unpacked_code = no_unpacked_code
    session_files = no_session_files
    user_settings = no_user_settings

    def channel_of(self, version: str | None) -> Channel:
        """The channel of a launch of a Pi of `version` (module doc)."""
        return "mcp" if has_mcp(version) else "cli"

    def own_resume(self, ref: str) -> tuple[str, ...] | None:
        return ("--session", ref)  # a file or an id: Pi's `--session` opens either

    def new_session_ref(self, session_id: str, state_dir: str) -> str | None:
        """The session's own file; on the MCP route the plan names the session by an id
        made from it (`_session_id`)."""
        return os.path.join(state_dir, "pi-session.jsonl")

    def kept_session(self, ref: str, env: Mapping[str, str]) -> tuple[str, str] | None:
        if os.path.isabs(ref):
            return os.path.dirname(ref), os.path.basename(ref)  # the file amux names
        # Pi 1.x: `<sessions>/--<cwd>--/<time>_<id>.jsonl`, under its agent directory
        # unless PI_CODING_AGENT_SESSION_DIR says otherwise.
        return _sessions_dir(env), f"*_{ref}.jsonl"

    def headless(self, home: str, scratch: str) -> Headless:
        """`pi -p …`, offline (no update or model-list checks)."""
        agent_dir = os.path.join(home, ".pi", "agent")
        return Headless(("-p", PROMPT), env=EnvPatch({"PI_CODING_AGENT_DIR": agent_dir,
                                                      "PI_OFFLINE": "1"}), dirs=(agent_dir,))

    def plan(self, request: AgentRequest) -> LaunchPlan:
        refuse(request.args, ("--session", "--session-id", "--continue", "-c", "--resume",
                              "-r", "--fork", "--session-dir"), "Pi")
        if has_mcp(request.version) and request.memory is not None:
            return _mcp_plan(request)
        args, appended, no_session = _options(request.args)
        if no_session and request.resume:
            raise ResumeFlagRefused(
                "--no-session would start a new, ephemeral Pi session instead of resuming "
                "this one; resume without it, or start a new one with `amux run pi -- "
                "--no-session …`")
        agent_session = None if no_session else _session_ref(request)
        not_resumable = EPHEMERAL if no_session else None
        session = _session_args(agent_session)
        memory = request.memory
        endpoint = _endpoint(request)
        if memory is None:
            return with_endpoint(LaunchPlan((request.executable, *session, *request.args),
                                            agent_session=agent_session,
                                            not_resumable=not_resumable), endpoint)
        instructions = request.frozen_instructions or merge_instructions(
            list(request.user_instructions), memory.protocol) or ""
        # Taken literally: a value naming a file (which a plan does not read) is reported
        # even when its text is unchanged, since the plan cannot tell.
        ignored = ignored_on_resume(request, APPEND, appended,
                                    merge_instructions(appended, memory.protocol))
        files: tuple[PlanFile, ...] = ()
        value = instructions  # in argv only for a caller that gives the plan no directory
        if request.files_dir is not None:
            value = os.path.join(request.files_dir, INSTRUCTIONS_FILE)
            files = (PlanFile(value, instructions),)
        argv = (request.executable, *session, APPEND, value, *args)
        return with_endpoint(
            LaunchPlan(argv, env=EnvPatch(dict(memory.env), path=(memory.bin_dir,)),
                       channel="cli",
                       instructions=instructions, files=files, agent_session=agent_session,
                       not_resumable=not_resumable, warnings=tuple(ignored)), endpoint)


def _sessions_dir(env: Mapping[str, str]) -> str:
    """Where Pi 1.x keeps its sessions (a directory per cwd below it)."""
    found = env.get("PI_CODING_AGENT_SESSION_DIR")
    if found:
        return found
    home = env.get("HOME") or os.path.expanduser("~")
    agent_dir = env.get("PI_CODING_AGENT_DIR") or os.path.join(home, ".pi", "agent")
    if agent_dir == "~" or agent_dir.startswith("~/"):
        agent_dir = home + agent_dir[1:]
    return os.path.join(agent_dir, "sessions")


def _session_ref(request: AgentRequest) -> str | None:
    """The Pi session of this launch: a new one's file (the command-line route), or on the
    MCP route a UUID made from that file's path, with which Pi keeps it where it keeps
    its own (`--session-id`); a resumed one's as it was recorded."""
    ref = request.agent_session
    if ref is None or request.resume or not has_mcp(request.version):
        return ref
    return chosen_uuid(SESSION_NAMESPACE, ref)


def _session_args(ref: str | None) -> list[str]:
    """`--session FILE` for a session file, `--session-id ID` for an id."""
    if ref is None:
        return []
    return ["--session", ref] if os.path.isabs(ref) else ["--session-id", ref]


def _mcp_plan(request: AgentRequest) -> LaunchPlan:
    """A launch with memory of a Pi with MCP (module doc)."""
    memory = request.memory
    assert memory is not None
    if request.files_dir is None:
        raise PlanRefused("Pi needs the session's directory for its extension")
    args, appended, no_session = _options(request.args)
    if no_session and request.resume:
        raise ResumeFlagRefused(
            "--no-session would start a new, ephemeral Pi session instead of resuming "
            "this one; resume without it, or start a new one with `amux run pi -- "
            "--no-session …`")
    agent_session = None if no_session else _session_ref(request)
    # The user's own --append-system-prompt values replace Pi's discovery, as the flag
    # does; without them Pi's own discovered text comes first (the extension adds to it).
    given = list(request.user_instructions) if appended else []
    instructions = (request.frozen_instructions
                    or merge_instructions(given, memory.protocol) or "")
    replace = instructions != memory.protocol
    warnings = ignored_on_resume(request, APPEND, appended,
                                 merge_instructions(appended, memory.protocol))
    off = [flag for flag in NO_MCP if flag in args]
    if off:
        warnings.append(f"{off[0]} leaves Pi without MCP: it will not offer the memory "
                        "tools; launch without it for memory")
    # The amux home (or an isolated target's `~/.amux`): the session directory's grandparent.
    path = os.path.join(os.path.dirname(os.path.dirname(request.files_dir)), MCP_FILE)
    data = os.path.join(request.files_dir, LAUNCH_FILE)
    argv = (request.executable, *_session_args(agent_session), "--extension", path, *args)
    return with_endpoint(
        LaunchPlan(argv, env=EnvPatch({LAUNCH_VARIABLE: data}), channel="mcp",
                   instructions=instructions,
                   files=(PlanFile(path, MCP_EXTENSION),
                          PlanFile(data, _launch_data(memory, instructions, replace))),
                   agent_session=agent_session,
                   not_resumable=EPHEMERAL if no_session else None,
                   warnings=tuple(warnings)), _endpoint(request))
