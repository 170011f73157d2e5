"""Codex (`codex`): protocol merged into `developer_instructions`, tools over MCP.

Everything goes in as `-c key=value` overrides for this launch only, before the
subcommand (Codex reads them as TOML values); the user's config.toml is never
edited.

- The effective developer instructions the user set come first, unchanged, then the
  protocol, in one `developer_instructions`; Codex's own base instructions stay. A
  `-c developer_instructions=…` in the user's arguments is that text; else
  `user_instructions` finds it in every layer Codex reads, in Codex's precedence
  (trusted project `.codex/config.toml` layers, profile, config.toml, system), by asking
  `codex app-server` (`codex_layers`). amux's `-c` then outranks every layer, so the
  merged text must start from that effective value.
- `features.memories`, `memories.use_memories` and `memories.generate_memories`
  are forced false.
- MCP server `amux` with `default_tools_approval_mode = "approve"`, so memory
  calls are not refused for want of an approval prompt.
- Resume is Codex's own `resume` (`codex exec resume ID …` for `exec`). Codex names its
  threads, so the launcher learns the id after the first run: Codex writes one rollout
  per thread (`$CODEX_HOME/sessions/YYYY/MM/DD/rollout-…-<id>.jsonl`, first line
  `session_meta` with the id, cwd, timestamp, originator) and holds it open while the
  thread runs. `pick_thread` takes the rollout the launched process tree held open; only
  when no tree could hold it (the tree was not watched, or an interactive Codex without
  `-c` may host the thread in its shared background server) does it fall back to the one
  new rollout of this cwd and time. Anything else records no id, with a warning: never a
  guess that could resume another session's thread.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence

from amux.adapters.base import (
    ENDPOINT_PROVIDER,
    NO_EXIT_MEANINGS,
    NOT_RESUMABLE,
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
    Probe,
    RequestSize,
    Requirement,
    ResumeFlagRefused,
    SessionFile,
    SessionFiles,
    basic_authorization,
    endpoint_api,
    first_line_version,
    first_operand,
    has_flag,
    ignored_on_resume,
    merge_instructions,
    no_kept_session,
    no_unpacked_code,
    no_user_settings,
    take_option,
    with_endpoint,
    without_userinfo,
)
from amux.adapters.codex_layers import (
    codex_home,
    developer_instructions,
    exec_refused,
    take_overrides,
    working_dir,
)
from amux.envpatch import EnvPatch
from amux.typing_light import NamedTuple

MEMORY_SETTINGS = ("features.memories", "memories.use_memories", "memories.generate_memories")
"""Codex's native-memory settings; every launch forces them false (so does the app-server
driver, which also checks `config/read` reports them so)."""
SUPPRESSION = tuple(f"{key}=false" for key in MEMORY_SETTINGS)
AUTHORIZATION_VARIABLE = "AMUX_ENDPOINT_AUTH_TOKEN"
"""Holds the `Authorization` header of an endpoint whose URL has a user and password, for
Codex only (`env_http_headers`); a name with TOKEN in it, which Codex's default
`shell_environment_policy` keeps from the commands it runs."""
EPHEMERAL = ("started with Codex's exec --ephemeral, which keeps no thread: Codex kept "
             "nothing to resume")
ENDPOINT_PATHS: Mapping[EndpointApi, str] = {"openai": "/v1"}
"""Its provider's `base_url` is the API's `/v1`: Codex adds `/responses`."""
_NOT_UI = frozenset({"exec", "e", "review", "login", "logout", "mcp", "mcp-server", "plugin",
                     "app-server", "remote-control", "completion", "update", "doctor",
                     "sandbox", "debug", "apply", "a", "queue", "archive", "delete",
                     "migrate-rollouts", "migrate-nfs-db", "unarchive", "exec-server",
                     "features", "help"})
"""Codex 0.171.0's subcommands that start no UI (`codex --help`); anything else in their
place is the interactive UI's prompt, or a UI of its own (`resume`, `fork`, `cloud`)."""
_INFO = frozenset({"-h", "--help", "-V", "--version"})


_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def toml_value(value: str | Sequence[str] | Mapping[str, str]) -> str:
    """`value` as the TOML that `-c key=VALUE` expects: a basic string (JSON's escapes are
    TOML's; TOML also wants DEL escaped), or an array or inline table of them. Written
    here rather than with tomlkit, whose import would cost every Codex launch ~6 ms."""
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{key if _BARE_KEY.fullmatch(key) else toml_value(key)} = "
                               f"{toml_value(item)}" for key, item in value.items()) + "}"
    return "[" + ", ".join(toml_value(item) for item in value) + "]"


def parse_toml_value(raw: str) -> str:
    """A `-c` value as Codex reads it: TOML if it parses, else the literal string."""
    import tomlkit

    try:
        value = tomlkit.parse(f"v = {raw}")["v"]
    except Exception:  # Codex falls back to the raw string too
        return raw
    return str(value)


class CodexAdapter:
    name = "codex"
    display_name = "Codex"
    model_api: ModelApi = "responses"
    endpoint_paths = ENDPOINT_PATHS
    prompt_args = ("exec", PROMPT)
    without_terminal: NoTerminal = "fails"
    """Its UI exits 1 at once: "stdin is not a terminal"."""
    first_request: FirstRequest | None = FirstRequest(
        "0.171.0", memory=RequestSize(46975, 11744), plain=RequestSize(39823, 9956))
    key_variables = ("OPENAI_API_KEY",)
    instruction_files = ("AGENTS.md", "AGENTS.override.md")
    mcp_tool_prefix: str | None = ""  # the tool's own name, in the namespace `mcp__amux`
    channel: Channel = "mcp"
    tracks_sessions = True
    version_args: tuple[str, ...] | None = ("--version",)
    probe_env = EnvPatch()
    version = first_line_version
    requires = (
        Requirement("flag", "-c", "every setting below is passed as `-c key=value`"),
        Requirement("flag", "resume", "`amux run --resume` resumes the thread"),
        Requirement("flag", "resume", "`amux run --resume` resumes an exec thread",
                    ("exec", "--help")),
        Requirement("flag", "app-server", "the user's developer_instructions are read from "
                    "every config layer as Codex sees them (else from the files, guessed)"),
        Requirement("setting", "developer_instructions", "the memory protocol reaches Codex"),
        Requirement("setting", "use_memories", "Codex's own memory is not used"),
        Requirement("setting", "generate_memories", "Codex's own memory is not written"),
        Requirement("setting", "mcp_servers", "the memory tools reach Codex"),
        Requirement("setting", "default_tools_approval_mode", "the memory tools run without "
                    "an approval prompt"),
        Requirement("env", "CODEX_HOME", "an isolated run reads the target user's config, "
                    "and the launcher finds the thread's rollout"),
        *(Requirement("setting", name, "`amux run --endpoint` reaches Codex")
          for name in ("model_provider", "model_providers", "base_url", "wire_api",
                       "env_key", "env_http_headers")),
    )
    package: str | None = "@openai/codex"
    exit_meanings: Mapping[int, str] = NO_EXIT_MEANINGS
    quick_exit_hint = ("log in (`codex login`), or set OPENAI_API_KEY, or point it at a "
                       "model server: `amux run --endpoint URL --model NAME codex`")

    def starts_ui(self, args: tuple[str, ...]) -> bool:
        return _subcommand(args) not in _NOT_UI and not has_flag(args, _INFO)

    def quick_exit_cause(self, argv: tuple[str, ...], probe: Probe) -> str | None:
        """`exec` outside a git repository in a folder not trusted in its config, which
        Codex refuses without --skip-git-repo-check."""
        cwd = working_dir(argv, probe.cwd)
        if (_subcommand(argv) not in ("exec", "e") or "--skip-git-repo-check" in argv
                or not exec_refused(probe, cwd)):
            return None
        return (f"Codex runs `exec` only in a git repository or a folder trusted in its config, "
                f"and {cwd} is neither; run it in a repository, trust the folder (start "
                "`codex` there once), or pass the flag: `amux run codex -- exec "
                '--skip-git-repo-check "…"`')

    def user_instructions(self, args: tuple[str, ...], probe: Probe) -> tuple[str, ...]:
        """The `developer_instructions` Codex would use without us, from all its layers
        (`codex_layers`). A `-c developer_instructions=…` in `args` outranks them all; `plan`
        takes that one, since it must also take it out of the arguments."""
        if take_overrides(args, "developer_instructions")[1]:
            return ()
        found = developer_instructions(args, probe)
        return () if found is None else (found,)

    unpacked_code = no_unpacked_code
    user_settings = no_user_settings

    def isolated_env(self, home: str) -> EnvPatch:
        return EnvPatch({"CODEX_HOME": os.path.join(home, ".codex")})

    def own_resume(self, ref: str) -> tuple[str, ...] | None:
        return ("resume", ref)

    def new_session_ref(self, session_id: str, state_dir: str) -> str | None:
        return None  # Codex names its threads; the launcher learns the id after the run

    kept_session = no_kept_session

    def session_files(self, env: Mapping[str, str], state_dir: str) -> SessionFiles | None:
        return SessionFiles(os.path.join(codex_home(env), "sessions"), "rollout-*.jsonl",
                            pick_thread)

    def headless(self, home: str, scratch: str) -> Headless:
        """`codex exec -s workspace-write -o FILE …`, the answer read from FILE."""
        codex_home = os.path.join(home, ".codex")
        answer = os.path.join(scratch, "codex-last-message.txt")
        return Headless(("exec", "--skip-git-repo-check", "-s", "workspace-write", "-o",
                         answer, PROMPT), env=EnvPatch({"CODEX_HOME": codex_home}),
                        dirs=(codex_home,), answer_file=answer)

    def plan(self, request: AgentRequest) -> LaunchPlan:
        positional = [arg for arg in request.args if not arg.startswith("-")]
        if positional[:1] == ["resume"] or positional[:2] == ["exec", "resume"]:
            raise ResumeFlagRefused(
                "`codex resume` would resume a Codex session behind amux's back (its frozen "
                "memory binding and protocol would be lost); use "
                "`amux run --resume AMUX_SESSION_ID` (see `amux sessions list`)")
        memory = request.memory
        # `exec --ephemeral` writes no rollout: there is no thread to learn or resume.
        not_resumable = EPHEMERAL if "--ephemeral" in request.args else None
        endpoint = self._endpoint(request.endpoint)
        if memory is None:
            return with_endpoint(
                LaunchPlan((request.executable, *self._resume(request, list(request.args))),
                           agent_session=request.agent_session, not_resumable=not_resumable),
                endpoint)
        args, given = take_overrides(request.args, "developer_instructions")
        user = [parse_toml_value(given[-1])] if given else list(request.user_instructions)
        fresh = merge_instructions(user, memory.protocol)
        instructions = request.frozen_instructions or fresh
        ignored = ignored_on_resume(request, "-c developer_instructions=",
                                    [parse_toml_value(value) for value in given], fresh)
        overrides = [
            f"developer_instructions={toml_value(instructions or '')}",
            *SUPPRESSION,
            f"mcp_servers.amux.command={toml_value(memory.mcp_command[0])}",
            f"mcp_servers.amux.args={toml_value(list(memory.mcp_command[1:]))}",
            f"mcp_servers.amux.env={toml_value(dict(sorted(memory.env.items())))}",
            'mcp_servers.amux.default_tools_approval_mode="approve"',
        ]
        argv = (request.executable, *(part for o in overrides for part in ("-c", o)),
                *self._resume(request, args))
        return with_endpoint(LaunchPlan(argv, channel="mcp", instructions=instructions,
                                        suppression={"argv": list(SUPPRESSION)},
                                        agent_session=request.agent_session,
                                        not_resumable=not_resumable, warnings=tuple(ignored)),
                             endpoint)

    @staticmethod
    def _endpoint(endpoint: EndpointRequest | None) -> EndpointWiring | None:
        """A provider of this launch only, in `-c` overrides (the user's config files are
        not touched): the Responses API at the URL, the key read by Codex itself from the
        named variable (none: no Authorization header). A user and password in the URL
        never reach argv: the URL goes without them, and Codex sends them as the
        `Authorization: Basic …` it would have made of them, a header it reads from a
        variable of its environment (`env_http_headers`); a key outranks it, as it did."""
        if endpoint is None:
            return None
        endpoint_api(endpoint, "Codex", ENDPOINT_PATHS, "an OpenAI-compatible endpoint that "
                     "serves the Responses API (`/v1/responses`: Ollama, vLLM, llama.cpp's "
                     "server do); use claude or pi for an Anthropic one")
        provider = f"model_providers.{ENDPOINT_PROVIDER}"
        authorization = basic_authorization(endpoint.url)
        overrides = [f"model_provider={toml_value(ENDPOINT_PROVIDER)}",
                     f"{provider}.name={toml_value('amux run --endpoint')}",
                     f"{provider}.base_url={toml_value(without_userinfo(endpoint.url))}",
                     f'{provider}.wire_api="responses"',
                     *([f"{provider}.env_key={toml_value(endpoint.key_env)}"]
                       if endpoint.key_env else []),
                     *([f"{provider}.env_http_headers="
                        f"{toml_value({'Authorization': AUTHORIZATION_VARIABLE})}"]
                       if authorization else []),
                     f"model={toml_value(endpoint.model)}"]
        return EndpointWiring(args=tuple(part for o in overrides for part in ("-c", o)),
                              env=EnvPatch({AUTHORIZATION_VARIABLE: authorization},
                                           secret=(AUTHORIZATION_VARIABLE,))
                              if authorization else EnvPatch())

    @staticmethod
    def _resume(request: AgentRequest, args: list[str]) -> list[str]:
        if not request.resume or request.agent_session is None:
            return args
        if args[:1] == ["exec"]:
            return ["exec", "resume", request.agent_session, *args[1:]]
        return ["resume", request.agent_session, *args]


# -- which thread a run created ---------------------------------------------------------------

_VALUE_OPTIONS = frozenset((
    "-c", "--config", "--enable", "--disable", "--remote", "--remote-auth-token-env", "-i",
    "--image", "-m", "--model", "--local-provider", "-p", "--profile", "-s", "--sandbox", "-C",
    "--cd", "--add-dir", "-a", "--ask-for-approval", "--thread-source",
    "--cyber-access-program", "--output-schema", "--color", "-o", "--output-last-message"))
"""Codex 0.171 options that take a value (`codex --help`, `codex exec --help`)."""
CLOCK_SLACK = 1.0
"""Seconds a rollout's `session_meta` timestamp may lie outside the run (clock rounding)."""


class Rollout(NamedTuple):
    """A rollout's `session_meta`, as far as the choice of a thread needs it."""

    id: str
    cwd: str | None
    started: float | None
    originator: str | None
    own: bool
    """A thread of the launched Codex itself (not a sub-agent's), of the expected source."""
    held: bool


def pick_thread(run: FinishedRun) -> tuple[str | None, str | None]:
    """(The id of the Codex thread `run` created, or None and a warning saying why)."""
    args = run.argv[1:]
    command = _subcommand(args)
    expected_source = (take_option(args, ("--thread-source",))[1] or ["user"])[-1]
    threads = [t for t in (_rollout(f, expected_source) for f in run.files)
               if t is not None and t.own]
    held = [t for t in threads if t.held]
    if held:  # several: threads started one after another (`/new`): the last one
        return max(held, key=lambda t: (t.started or 0.0, t.id)).id, None
    if "--ephemeral" in args:
        return None, EPHEMERAL
    # An embedded Codex hosts its threads in the launched process tree: `exec` always, the
    # interactive one whenever it has `-c` overrides (amux's memory launch always has).
    embedded = command in ("exec", "e") or "--no-daemon" in args or any(
        arg in ("-c", "--config") or arg.startswith("--config=") for arg in args)
    if run.watched and embedded:
        return None, ("Codex started no thread in this session (no prompt was sent?)"
                      + NOT_RESUMABLE)
    cwd = os.path.normpath(working_dir(args, run.cwd))
    fits = [t for t in threads
            if t.cwd is not None and os.path.normpath(t.cwd) == cwd
            and t.started is not None
            and run.started_at - CLOCK_SLACK <= t.started <= run.ended_at + CLOCK_SLACK
            and (t.originator == "codex_exec") == (command in ("exec", "e"))]
    if len(fits) == 1:
        return fits[0].id, None
    if fits:
        return None, (f"could not tell which of {len(fits)} new Codex threads in {cwd} is "
                      "this session's (another Codex ran there at the same time)"
                      + NOT_RESUMABLE)
    return None, "Codex recorded no thread for this session" + NOT_RESUMABLE


def _rollout(found: SessionFile, expected_source: str) -> Rollout | None:
    """The rollout's `session_meta`, None unless it is one naming the file's own id."""
    try:
        first = json.loads(found.first_line)
    except ValueError:
        return None
    payload = first.get("payload") if isinstance(first, dict) else None
    if first.get("type") != "session_meta" or not isinstance(payload, dict):
        return None
    thread = payload.get("id")
    if not isinstance(thread, str) or not os.path.basename(found.path).endswith(
            f"-{thread}.jsonl"):
        return None
    source, thread_source = payload.get("source"), payload.get("thread_source")
    own = isinstance(source, str) and thread_source in (None, expected_source)
    cwd, originator = payload.get("cwd"), payload.get("originator")
    return Rollout(thread, cwd if isinstance(cwd, str) else None,
                   _epoch(payload.get("timestamp")),
                   originator if isinstance(originator, str) else None, own, found.held)


def _epoch(stamp: object) -> float | None:
    if not isinstance(stamp, str):
        return None
    from datetime import datetime  # only when the launcher learns a thread

    try:
        return datetime.fromisoformat(stamp).timestamp()
    except ValueError:
        return None


def _subcommand(args: tuple[str, ...]) -> str | None:
    """Codex's subcommand (`exec`, `resume`, …), None for its interactive UI."""
    index = first_operand(args, _VALUE_OPTIONS)
    return None if index is None else args[index]
