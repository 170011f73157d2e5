"""The one interface every agent adapter implements: a pure request → launch plan.

An adapter knows one agent CLI: where its instruction channel is, how to turn its
native memory off for one launch, how to register the memory tools, how it
resumes its own sessions, where the user's own instructions for it live, how to
point it at a model endpoint (`amux run --endpoint`) and how it runs one headless
turn (`amux eval live`). `plan` reads no files and starts nothing: it gets everything
in `AgentRequest`, so a plan is a function of its inputs and the same inputs on resume
give the same plan. What must be read from the user's set-up is read by the adapter's
hooks (`user_instructions`, `user_settings`, `quick_exit_cause`) through an injected
`Probe`, so each hook is tested with a fake and the launcher never needs to know which
agent reads what. An agent that names its own sessions says where it writes them
(`session_files`), and a pure `pick` says which of the files a run wrote is that run's
session. What an adapter relies on in its agent (flags, variables, settings) it declares
as data (`requires`), which `amux doctor` checks against the installed agent.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType

from amux.envpatch import EnvPatch
from amux.errors import InvalidArgument
from amux.typing_light import NamedTuple, Protocol

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Literal, TypeAlias

    Channel: TypeAlias = Literal["mcp", "cli", "none"]
    ModelApi: TypeAlias = Literal["anthropic", "responses", "chat", "gemini"]
    """The API an agent speaks to its model: Anthropic Messages, OpenAI Responses, OpenAI
    chat completions, the Gemini API."""
    EndpointApi: TypeAlias = Literal["openai", "anthropic", "gemini"]
    RequirementKind: TypeAlias = Literal["flag", "env", "setting"]
    NoTerminal: TypeAlias = Literal["fails", "ends", "hangs"]
    """What an agent's interactive start does when stdin is not a terminal (`Adapter`)."""
else:  # names only annotations (and the adapters' imports of them) use
    Channel = ModelApi = EndpointApi = RequirementKind = NoTerminal = str

ENDPOINT_APIS: tuple[EndpointApi, ...] = ("openai", "anthropic", "gemini")
"""Every API kind `amux run --endpoint-api` takes (`EndpointApi`'s values)."""
ENDPOINT_API_OF: Mapping[ModelApi, EndpointApi] = {
    "anthropic": "anthropic", "responses": "openai", "chat": "openai", "gemini": "gemini"}
"""The `--endpoint-api` kind of each model API."""
NOTHING: Mapping[str, Any] = MappingProxyType({})
"""An empty mapping no one can change: the default of a record's mapping field."""
MEMORY_TOOLS = ("memory_search", "memory_get", "memory_upsert", "memory_forget",
                "result_continue")


class PlanRefused(InvalidArgument, ValueError):
    """No plan can be made from these arguments; the message says why and what to do."""


class ResumeFlagRefused(PlanRefused):
    """The user passed the agent's own resume flag, which would bypass the frozen state."""


class EndpointRefused(PlanRefused):
    """The agent cannot use the endpoint `amux run --endpoint` names (its API kind)."""


ENDPOINT_PROVIDER = "amux_endpoint"
"""The name of the provider an agent with providers gets for `amux run --endpoint`."""
NO_KEY = "amux-endpoint-no-key"
"""The key an agent gets for an endpoint that needs none (a local server ignores it)."""


class EndpointRequest(NamedTuple):
    """`amux run --endpoint URL --model NAME`: the model endpoint of one session, frozen
    with it, which the adapter points its agent at for that launch only."""

    url: str
    model: str
    api: EndpointApi | None = None
    """What the endpoint speaks; None: the agent's own kind."""
    key_env: str | None = None
    """The variable holding the endpoint's key (its name only); None: no key."""


_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^\s/?#\"'<>\\]*@")
"""A URL's scheme and the user and password after it (to the authority's last `@`)."""


def without_userinfo(text: str) -> str:
    """`text` with every URL in it shown without its user and password
    (`http://user:pw@host/v1` → `http://host/v1`): how amux shows, logs and stores an
    endpoint's URL. Only the agent's environment holds it whole."""
    return _USERINFO.sub(r"\1", text)


def basic_authorization(url: str) -> str | None:
    """The `Authorization` header value (`Basic …`, RFC 7617) of the user and password in
    `url`, percent-decoded; None when it has none."""
    from urllib.parse import unquote, urlsplit

    parts = urlsplit(url)
    if parts.username is None:
        return None
    import base64

    pair = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
    return "Basic " + base64.b64encode(pair.encode()).decode()


class EndpointWiring(NamedTuple):
    """What pointing an agent at an endpoint adds to its plan (`with_endpoint`)."""

    args: tuple[str, ...] = ()
    """Arguments put right after the executable, before the user's."""
    env: EnvPatch = EnvPatch()
    """What it changes in the agent's environment, after the plan's own changes: the
    endpoint's variables, the user's own credentials removed, its key copied from the
    variable `--endpoint-key-env` names, a credential in its URL as a `secret`."""
    files: tuple[PlanFile, ...] = ()


class Memory(NamedTuple):
    """How this session reaches memory; None in a request means a session without memory."""

    protocol: str
    """The full frozen protocol text for the adapter's channel."""
    mcp_command: tuple[str, ...]
    """Starts the stdio MCP server (`amux memory mcp`)."""
    env: dict[str, str]
    """What the MCP server or the CLI needs to reach the Hub (AMUX_MEMORY_CONFIG, …)."""
    bin_dir: str
    """A directory holding only `amux`, put first on PATH for the CLI channel."""


class AgentRequest(NamedTuple):
    executable: str
    args: tuple[str, ...]
    """The user's own arguments (after `--`), passed through except what the adapter merges."""
    memory: Memory | None
    user_instructions: tuple[str, ...] = ()
    """Instructions the agent itself would have added from the user's set-up, in its own
    order (the adapter's `user_instructions` hook, read once for a new session)."""
    frozen_instructions: str | None = None
    """On resume: the merged text the session started with, reused byte for byte."""
    agent_session: str | None = None
    """The agent's own session reference: chosen up front, or the one to resume."""
    resume: bool = False
    files_dir: str | None = None
    """The session's own directory for files the plan gives the agent (its state directory;
    for an isolated run a directory the target user owns)."""
    endpoint: EndpointRequest | None = None
    """The model endpoint of this session (`amux run --endpoint`), None: the agent's own."""
    user_settings: Mapping[str, str] = NOTHING
    """What the plan must merge its own settings into, read from the user's set-up at every
    launch, new or resumed (the adapter's `user_settings` hook; the agent rereads its own
    config each launch too): e.g. the user's own value of a variable the plan also sets."""
    version: str | None = None
    """The agent's version as the launcher learnt it (`version_args`), recorded with the
    session and given again on resume, so a resume takes the route its start took; None
    when unknown (a dry run knows only a version learnt before)."""


class PlanFile(NamedTuple):
    """A file the plan gives the agent (Pi's merged instructions): written before every
    launch of the plan, so on resume from the frozen text, temp-and-replace, owned by the
    user the agent runs as."""

    path: str
    text: str
    mode: int = 0o600
    private: bool = False
    """Its text holds what the user keeps in a file of their own (an MCP server's token):
    the dry run names the file, not its text, and only a file (0600) ever carries it."""


class PlanMirror(NamedTuple):
    """A directory the agent is given in place of a real one (Gemini CLI's home, which holds
    the settings amux must add to for one launch): made before every launch with each entry
    of `source` as a symbolic link to it, except the names in `own`, which the plan fills
    itself (its files, a mirror inside it). After the agent exits, what it created or
    replaced in the mirror is moved back into `source`, so nothing it writes is lost, and
    the mirror is removed."""

    path: str
    source: str
    own: tuple[str, ...] = ()


class LaunchPlan(NamedTuple):
    """One launch of the agent as data; never changed once made (`_replace`)."""

    argv: tuple[str, ...]
    env: EnvPatch = EnvPatch()
    """What this launch changes in the environment the agent starts from: variables set
    (`set`), removed (`unset`), set from another variable of the launcher's (`copy`,
    name → source: a secret the plan must not hold, an endpoint's key), directories put
    first on PATH (`path`), and which set variables hold credentials (`secret`: the user
    and password of an endpoint's URL, which must stay out of argv; a dry run shows them
    redacted)."""
    channel: Channel = "none"
    instructions: str | None = None
    """The merged instruction text the agent receives (frozen in the session state)."""
    suppression: Mapping[str, Any] = NOTHING
    """The native-memory suppression applied, for the record and the contract: `env`,
    variables this plan sets (`env.set`) to those values; `argv`, arguments it passes."""
    agent_session: str | None = None
    warnings: tuple[str, ...] = ()
    files: tuple[PlanFile, ...] = ()
    not_resumable: str | None = None
    """Why this session can never be resumed (e.g. the agent keeps nothing); None if it can."""
    mirrors: tuple[PlanMirror, ...] = ()
    """Directories made for this launch (outer before inner), before its files are written."""


class Probe(Protocol):
    """The user's surroundings as an adapter's hooks may read them (injected), and a small
    cache the launcher keeps for them: a hook that asks the agent something slow remembers
    the answer under a key naming everything the answer depends on (`stat_signature` of
    the files it reads), so the next launch need not ask."""

    @property
    def env(self) -> Mapping[str, str]:
        """The environment the agent will start from."""
        ...

    @property
    def cwd(self) -> str:
        ...

    @property
    def executable(self) -> str | None:
        """The agent's executable, for a hook that asks the agent itself; None when it must
        not be started (a dry run starts nothing)."""
        ...

    def read_text(self, path: str) -> str | None:
        """The UTF-8 text of `path`, None when it does not exist (OSError otherwise)."""
        ...

    def realpath(self, path: str) -> str:
        """`path` absolute, with every symbolic link resolved (`os.path.realpath`)."""
        ...

    def list_dir(self, path: str) -> list[str] | None:
        """The names in directory `path`, sorted ([] when it does not exist); None when
        they cannot be read."""
        ...

    def stat_signature(self, path: str) -> str | None:
        """A text that changes whenever `path` does: its kind, mode, device and inode, and
        for anything but a directory its size and change times (a symbolic link: its own
        and its target's); "absent" when it does not exist. None when it cannot be told
        (unreadable, or changed too recently for its times to tell a later change apart):
        a key built from it must not be used."""
        ...

    def run(self, argv: Sequence[str], *, stdin: str = "", timeout: float,
            until: Callable[[str], bool] | None = None,
            env: EnvPatch | None = None,
            exit_grace: float | None = None) -> tuple[int, str, str] | None:
        """(exit status, stdout, stderr) of a short command, None if it could not run or
        did not finish within `timeout` seconds. `env` changes the environment for this
        command only. With `until`, stdin stays open after it
        is written until a stdout line satisfies `until`, then it is closed so the command
        ends (a server that stops at end of input before it answers); its process group is
        killed if it has not exited `exit_grace` seconds later (0: at once; None: the
        probe's default of a few seconds)."""
        ...

    def recall(self, key: str) -> str | None:
        """What was remembered under `key`, None if nothing (or no cache)."""
        ...

    def remember(self, key: str, value: str) -> None:
        """Keep `value` under `key` for later launches (bounded; best effort, never an
        error)."""
        ...

    def warn(self, message: str) -> None:
        """A start-up warning of this launch (printed and recorded with the plan's)."""
        ...


class SessionFile(NamedTuple):
    """One session file the agent wrote during a run (see `SessionFiles`)."""

    path: str
    first_line: str
    """Its first line, "" if it could not be read."""
    held: bool
    """Seen open in the agent's own process tree while it ran."""


class FinishedRun(NamedTuple):
    """What the launcher saw of a new session's first run of the agent."""

    argv: tuple[str, ...]
    """The agent's command line as launched (the plan's argv)."""
    cwd: str
    started_at: float
    ended_at: float
    """Wall-clock times (seconds since the epoch) around the agent's run."""
    watched: bool
    """Whether the agent's process tree was watched from its start to its exit, so a file
    it held open is marked `held`."""
    files: tuple[SessionFile, ...]
    """The session files that did not exist when the agent started."""


class SessionFiles(NamedTuple):
    """Where an agent that names its own sessions writes one file per session. The
    launcher watches them during a new session's first run; `pick` (the adapter's pure
    decision) names the agent session that run created, or None with a warning."""

    directory: str
    pattern: str
    """A file-name pattern (fnmatch) of session files anywhere below `directory`."""
    pick: Callable[[FinishedRun], tuple[str | None, str | None]]
    held: bool = True
    """Whether `pick` needs to know which files the agent's process tree held open (Codex),
    so the tree is polled while it runs; False: the listings before and after suffice."""


PROMPT = "\0prompt"
"""Stands for the prompt in `Headless.args` (no real argument holds a NUL)."""


class Headless(NamedTuple):
    """How one non-interactive turn of the agent runs in a home of its own (never the
    user's), for `amux eval live`, which acts on this data: every turn is `amux run
    --endpoint URL --model NAME AGENT -- ARGS` in the run's work directory."""

    args: tuple[str, ...]
    """The turn's arguments after `--`; `PROMPT` stands for the prompt."""
    env: EnvPatch = EnvPatch()
    """What keeps the agent in the run's home (its config directory, no update checks)."""
    dirs: tuple[str, ...] = ()
    """Directories made before the first turn."""
    files: tuple[PlanFile, ...] = ()
    """Files written before the first turn (a settings file the agent needs)."""
    answer_file: str | None = None
    """Where the agent writes its final answer (removed before each turn); None: stdout."""
    answer: Callable[[str], str] = str.strip
    """The final answer in the agent's stdout (when there is no `answer_file`)."""
    limits: tuple[str, ...] = ()
    """Warnings `amux run` prints at every new launch of this agent that state a limit of
    its adapter, not a failure to wire memory (left out of a turn's warnings)."""


class RequestSize(NamedTuple):
    """How large one model request's content is: its instructions, messages and tool
    definitions as compact JSON (`amux.eval.model_apis.size`)."""

    chars: int
    tokens: int
    """The estimate at 4 characters a token (`amux.eval.model_apis.CHARS_PER_TOKEN`)."""


class FirstRequest(NamedTuple):
    """The agent's first model request through `amux run` at its defaults (a fresh home,
    one headless turn), measured with the pinned agent: what a model's context window must
    hold before the session has done anything (the launcher's window check). Measured and
    kept true by tests/e2e/test_first_request.py; the numbers are in
    docs/agent-findings.md."""

    version: str
    """The agent's version it was measured at."""
    memory: RequestSize
    """With amux memory: the protocol in its instructions, the memory tools."""
    plain: RequestSize
    """Without memory (off on the Hub, or no Hub): the agent's own prompt."""


class Requirement(NamedTuple):
    """One thing in the agent that the adapter relies on, declared so that `amux doctor`
    can check the installed agent has it (an agent update may rename or drop it)."""

    kind: RequirementKind
    """`flag`: an option or subcommand the adapter passes, which must appear in the output
    of `help_args`; `env`: a variable the adapter sets or removes, and `setting`: a config
    key it sets, either of which must be a string in the agent's installed code."""
    name: str
    why: str
    """What amux loses without it (shown when it is missing)."""
    help_args: tuple[str, ...] = ("--help",)
    """For a flag: the arguments whose output lists it (a subcommand's own help)."""
    since: str | None = None
    """The first version of the agent that has it, when amux uses it only from that version
    on (Pi's MCP route): an older agent is not checked for it."""


def chosen_session(start: str, resume: str) -> tuple[Requirement, Requirement]:
    """The requirements of an agent whose session id amux chooses up front with `start`
    and names again with `resume`."""
    return (Requirement("flag", start, "a new session's id is chosen up front, so it can be "
                        "resumed"),
            Requirement("flag", resume, "`amux run --resume` resumes that session"))


class Adapter(Protocol):
    """One agent CLI as amux knows it (the module's docstring). Its data members are
    read-only: an adapter declares them as plain class attributes."""

    @property
    def name(self) -> str:
        """The agent's command name (the registry's key)."""
        ...

    @property
    def display_name(self) -> str:
        """The agent's name for people ("Claude Code")."""
        ...

    @property
    def channel(self) -> Channel:
        """The memory channel this agent gets when memory is on."""
        ...

    @property
    def tracks_sessions(self) -> bool:
        """Whether the agent has sessions of its own that a resume must name (the fallback
        relaunches the command as it was given)."""
        ...

    @property
    def version_args(self) -> tuple[str, ...] | None:
        """The arguments that make the agent print its version (None: not asked)."""
        ...

    @property
    def probe_env(self) -> EnvPatch:
        """Variables for the quick answers amux asks the agent for (its version, its help):
        only what makes them cheaper, never what changes them."""
        ...

    @property
    def requires(self) -> tuple[Requirement, ...]:
        """Every flag, variable and setting of the agent that `plan` and the hooks use."""
        ...

    @property
    def package(self) -> str | None:
        """The npm package that installs the agent, for the command that installs or updates
        it (`amux doctor`); None: amux does not know how it is installed."""
        ...

    @property
    def quick_exit_hint(self) -> str | None:
        """What usually makes this agent fail at once (no login, no key) and the fix, for the
        line amux prints when the agent failed within seconds; None: nothing agent-specific."""
        ...

    @property
    def exit_meanings(self) -> Mapping[int, str]:
        """What an exit status of the agent's own means, with the fix (Gemini CLI's 55: the
        folder is not trusted), said in place of any guess about its model; empty: none."""
        ...

    @property
    def model_api(self) -> ModelApi:
        """The API the agent speaks to its usual model endpoint."""
        ...

    @property
    def endpoint_paths(self) -> Mapping[EndpointApi, str]:
        """Each API kind `amux run --endpoint` can point the agent at, its default first
        (`ENDPOINT_API_OF[model_api]`), with the version path its base URL ends in: `/v1`
        when the agent adds only the operation to it (`/chat/completions`, `/responses`,
        OpenCode's `/messages`), "" when it adds the version too (Claude's `/v1/messages`,
        Gemini's `/v1beta/models/…`: the server's root). The launcher puts a URL given in
        the other form right (`amux.launcher.endpoints.endpoint_url`); empty: none."""
        ...

    @property
    def prompt_args(self) -> tuple[str, ...]:
        """The arguments after `--` that run one prompt and exit, without the interactive UI
        (`-p PROMPT`, Codex's `exec PROMPT`, OpenCode's `run PROMPT`), `PROMPT` standing for
        the prompt: the example amux gives a start without a terminal; () for none."""
        ...

    @property
    def without_terminal(self) -> NoTerminal:
        """What the agent's interactive start (`starts_ui`) does when stdin is not a
        terminal and it has no prompt: `fails` at once (Codex; Claude, Copilot, Gemini and
        Qwen read a prompt from stdin and fail when none comes), `ends` with status 0
        having done nothing (Pi), or `hangs`, drawing its UI into the pipe (OpenCode),
        which the launcher refuses before it starts anything."""
        ...

    @property
    def first_request(self) -> FirstRequest | None:
        """The size of the agent's first model request, measured (None: not known)."""
        ...

    @property
    def key_variables(self) -> tuple[str, ...]:
        """The user's variables holding the credential of that endpoint: the key first, then
        any other credential the agent takes under its own name (Claude's bearer token)."""
        ...

    @property
    def instruction_files(self) -> tuple[str, ...]:
        """The names of the instruction files the agent reads from a project by default."""
        ...

    @property
    def mcp_tool_prefix(self) -> str | None:
        """What precedes a tool of the MCP server `amux` in the tool names the model sees
        ("" when the agent puts the server in a namespace field); None: no MCP channel."""
        ...

    def headless(self, home: str, scratch: str) -> Headless:
        """One non-interactive turn of the agent with `home` as its home and `scratch` as
        its temporary directory (both the run's own)."""
        ...

    def unpacked_code(self, env: Mapping[str, str], version: str | None) -> tuple[str, ...]:
        """Where an agent whose executable unpacks its code on first start keeps it (glob
        patterns of directories, given its environment and version), for `amux doctor` to
        search what the installed files hide; () for an agent installed as plain files."""
        ...

    def version(self, status: int, stdout: str, stderr: str) -> str | None:
        """The version in the answer to `version_args`, None if there is none."""
        ...

    def starts_ui(self, args: tuple[str, ...]) -> bool:
        """Whether the agent given these arguments (the user's, or the plan's after the
        executable) starts its interactive UI, which needs a terminal: no prompt option, no
        subcommand, no `--help` or `--version`."""
        ...

    def quick_exit_cause(self, argv: tuple[str, ...], probe: Probe) -> str | None:
        """Why a launch with this argv (the plan's, after the executable) failed within
        seconds, when the launch itself tells (Codex outside a trusted folder), with the
        fix; None when it cannot tell, and then amux names no cause (a start without a
        terminal the launcher tells from `starts_ui`). `probe`: the agent's user's
        surroundings (its environment, cwd and files, read as that user)."""
        ...

    def user_instructions(self, args: tuple[str, ...], probe: Probe) -> tuple[str, ...]:
        """The instructions the agent would add from the user's own set-up (its config
        layers, instruction files), in the agent's order; amux merges its protocol after
        them. Raises `PlanRefused` naming a file it cannot read."""
        ...

    def user_settings(self, args: tuple[str, ...], probe: Probe) -> Mapping[str, str]:
        """What `plan` must merge with from the user's set-up, at every launch (see
        `AgentRequest.user_settings`). Raises `PlanRefused` naming what it cannot read."""
        ...

    def isolated_env(self, home: str) -> EnvPatch:
        """What an isolated run (as another user, whose home is `home`) sets or removes in
        the agent's environment, so the agent reads that user's own config and never the
        launching service's."""
        ...

    def plan(self, request: AgentRequest) -> LaunchPlan:
        """The launch plan; raises `ResumeFlagRefused` for the agent's own resume flags."""
        ...

    def new_session_ref(self, session_id: str, state_dir: str) -> str | None:
        """The agent session reference to choose up front for a new launch, if the agent
        lets us choose it (else the launcher learns it after the run); `state_dir` is the
        amux session's own directory."""
        ...

    def kept_session(self, ref: str, env: Mapping[str, str]) -> tuple[str, str] | None:
        """Where the agent keeps the session `ref` that amux chose up front, once it has
        started it: a directory and a file-name pattern (fnmatch) to find below it, given
        the agent's environment. A new session with no such file after its run failed
        before the agent kept anything, and is not offered for resume. None: nothing to
        look for (a session the agent names is learned from its own files)."""
        ...

    def own_resume(self, ref: str) -> tuple[str, ...] | None:
        """The arguments after the executable with which the agent itself resumes its
        session `ref` (`--resume ID`): how a session started outside amux, which amux
        cannot resume, is resumed; None: the agent has no sessions of its own."""
        ...

    def session_files(self, env: Mapping[str, str], state_dir: str) -> SessionFiles | None:
        """For an agent that names its own sessions (no `new_session_ref`): where they are
        written, given the agent's environment and the amux session's own directory, so
        the launcher can learn the name."""
        ...


def channel_for(adapter: Adapter, version: str | None) -> Channel:
    """The memory channel of a launch of the agent at `version`: `channel_of(version)` of
    an adapter whose agent gained a channel in some version (Pi's MCP), else its
    `channel`."""
    channel_of: Callable[[str | None], Channel] | None = getattr(adapter, "channel_of", None)
    return adapter.channel if channel_of is None else channel_of(version)


def no_user_settings(adapter: object, args: tuple[str, ...], probe: Probe) -> Mapping[str, str]:
    """`user_settings` of an adapter whose plan merges nothing of the user's set-up."""
    return NOTHING


def no_session_files(adapter: object, env: Mapping[str, str],
                     state_dir: str) -> SessionFiles | None:
    """`session_files` of an adapter whose session reference is chosen up front, or that
    has none (`session_files = no_session_files`)."""
    return None


def no_kept_session(adapter: object, ref: str, env: Mapping[str, str]) -> tuple[str, str] | None:
    """`kept_session` of an adapter whose session reference is learned after the run, or
    that has none."""
    return None


def no_unpacked_code(adapter: object, env: Mapping[str, str],
                     version: str | None) -> tuple[str, ...]:
    """`unpacked_code` of an agent whose installed files are its code."""
    return ()


NO_EXIT_MEANINGS: Mapping[int, str] = MappingProxyType({})
"""`exit_meanings` of an agent whose exit statuses say nothing amux can name."""


def no_quick_exit_cause(adapter: object, argv: tuple[str, ...], probe: Probe) -> str | None:
    """`quick_exit_cause` of an adapter that cannot tell one."""
    return None


def prompt_example(adapter: Adapter) -> str:
    """How the agent runs one prompt through amux: `amux run codex -- exec "…"`."""
    args = " ".join('"…"' if arg == PROMPT else arg for arg in adapter.prompt_args)
    return f"`amux run {adapter.name} -- {args}`"


def no_terminal(adapter: Adapter) -> str:
    """The cause when the agent's interactive UI was started with no terminal to show on
    (a launch from a script): its prompt form instead."""
    return (f"{adapter.display_name} starts its interactive UI, and stdin is not a terminal "
            f"here; run it in a terminal, or give it a prompt: {prompt_example(adapter)}")


def has_flag(args: Sequence[str], flags: frozenset[str]) -> bool:
    """Whether one of `flags` is in `args`, as `--flag` or `--flag=VALUE`."""
    return any(arg.partition("=")[0] in flags for arg in args)


def first_line_version(adapter: object, status: int, stdout: str, stderr: str) -> str | None:
    """`version` of an agent that prints it as its first line, on either stream (Pi uses
    stderr when stdin is no terminal): `version = first_line_version`."""
    lines = (stdout.strip() or stderr.strip()).splitlines()
    return lines[0] if status == 0 and lines else None


def endpoint_api(endpoint: EndpointRequest, agent: str, speaks: Mapping[EndpointApi, str],
                 how: str) -> EndpointApi:
    """The API kind of `endpoint` for an agent that speaks `speaks` (its `endpoint_paths`,
    its default first); `EndpointRefused` naming what the agent needs (`how`) for any other
    kind."""
    api = next(iter(speaks)) if endpoint.api is None else endpoint.api
    if api not in speaks:
        raise EndpointRefused(f"--endpoint-api {api}: {agent} cannot use such an endpoint; "
                              f"it needs {how}")
    return api


def url_form(path: str) -> str:
    """The form of the URL an agent takes whose `endpoint_paths` value is `path`, for
    people: `http://HOST:PORT/v1`, `http://HOST:PORT (the server's root)`."""
    return "http://HOST:PORT" + (path or " (the server's root)")


def with_endpoint(plan: LaunchPlan, wiring: EndpointWiring | None) -> LaunchPlan:
    """`plan` pointed at an endpoint: `wiring`'s arguments right after the executable,
    its files added, its environment changes after the plan's (`EnvPatch.then`)."""
    if wiring is None:
        return plan
    return plan._replace(argv=(plan.argv[0], *wiring.args, *plan.argv[1:]),
                         env=plan.env.then(wiring.env), files=(*plan.files, *wiring.files))


def merge_instructions(user: list[str], protocol: str | None) -> str | None:
    """The user's own instructions first, unchanged, then the protocol; None if both absent."""
    parts = [text for text in user if text]
    if protocol:
        parts.append(protocol)
    return "\n\n".join(parts) if parts else None


def ignored_on_resume(request: AgentRequest, flag: str, given: list[str],
                      fresh: str | None) -> list[str]:
    """A resume keeps the frozen instructions byte for byte; instructions given again
    after `--` are ignored, and the launch says so once, unless `fresh` (what they would
    have merged into) equals the frozen text."""
    if request.frozen_instructions is None or not given or fresh == request.frozen_instructions:
        return []
    shown = ", ".join(repr(value[:60] + ("…" if len(value) > 60 else "")) for value in given)
    return [f"{flag} {shown} ignored: a resumed session keeps the instructions it started "
            "with (see `amux sessions show`); start a new session to change them"]


def take_option(args: tuple[str, ...], names: tuple[str, ...],
                wanted: Callable[[str], bool] | None = None) -> tuple[list[str], list[str]]:
    """(remaining args, values of every `--name VALUE` / `--name=VALUE` occurrence); with
    `wanted`, only the values it accepts are taken, the others stay as they were given."""
    rest: list[str] = []
    values: list[str] = []
    index = 0
    while index < len(args):
        arg = args[index]
        name, equals, value = arg.partition("=")
        taken = 1
        if name in names and equals:
            found: str | None = value
        elif arg in names and index + 1 < len(args):
            found, taken = args[index + 1], 2
        else:
            found = None
        if found is not None and (wanted is None or wanted(found)):
            values.append(found)
        else:
            rest.extend(args[index:index + taken])
        index += taken
    return rest, values


def first_operand(args: Sequence[str], value_options: frozenset[str]) -> int | None:
    """The index of the first argument that is neither an option nor the value of one of
    `value_options` (the agent's subcommand), None if there is none."""
    index = 0
    while index < len(args):
        if args[index] in value_options:
            index += 2
        elif args[index].startswith("-"):
            index += 1
        else:
            return index
    return None


NOT_RESUMABLE = "; this amux session cannot be resumed"
"""Ends the reason a new session's agent session could not be learned."""


def chosen_uuid(namespace: str, session_id: str) -> str:
    """The agent session id (a UUID) amux chooses up front for its session `session_id`:
    the same id every time, distinct per agent by `namespace` (a fixed UUID).

    `uuid.uuid5(UUID(namespace), session_id)`, spelled out: importing `uuid` (with
    `platform` and libuuid) would cost each launch of these agents ~5 ms."""
    import hashlib

    digest = bytearray(hashlib.sha1(bytes.fromhex(namespace.replace("-", ""))
                                    + session_id.encode()).digest()[:16])
    digest[6] = digest[6] & 0x0F | 0x50  # version 5
    digest[8] = digest[8] & 0x3F | 0x80  # the RFC 4122 variant
    hexed = digest.hex()
    return f"{hexed[:8]}-{hexed[8:12]}-{hexed[12:16]}-{hexed[16:20]}-{hexed[20:]}"


def refuse(args: tuple[str, ...], flags: tuple[str, ...], agent: str) -> None:
    """Raise `ResumeFlagRefused` if any of the agent's own resume/session flags is present."""
    for arg in args:
        if arg.partition("=")[0] in flags:
            raise ResumeFlagRefused(
                f"{arg.partition('=')[0]} would resume a {agent} session behind amux's back "
                "(its frozen memory binding and protocol would be lost); use "
                "`amux run --resume AMUX_SESSION_ID` (see `amux sessions list`)")
