"""`amux run`: one launch of an agent with memory, from discovery to cleanup (SPEC §6).

`prepare` decides everything and starts nothing but the local Hub (on demand): it
resolves the binding once (bounded; read-only, from the Hub), renders the protocol
for the adapter's channel, asks the adapter's hooks for the user's own set-up and the
adapter for its plan, and returns the complete `Launch`: the session state to freeze,
the adapter's plan, the agent's environment as changes, the run directory. `--dry-run`
prints that `Launch`; `apply` acts on it: freezes the state, mints the delegated
token into the run directory, writes the plan's files, supervises the agent (no exec),
learns the agent's own session, and cleans up however the agent ends. `--resume ID`
prepares from the frozen state: the same binding, protocol, instructions and
suppression, with a fresh token. Discovery failures are warnings and a session
without memory; they never block the agent. An endpoint's URL is put in the form the
agent takes (`endpoints.endpoint_url`, said in one line), and a launch against it (new or
resumed) is refused when nothing answers there, when what answers does not speak the
agent's API, or when the model's context window cannot hold the agent's first request
(`window`). An interactive start that would draw its UI into a pipe and wait for good
(OpenCode's) is refused when there is no terminal.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import sys
import time
from collections.abc import Mapping
from pathlib import Path

from amux import __version__
from amux.adapters import ADAPTERS, for_agent
from amux.adapters.base import (
    ENDPOINT_API_OF,
    ENDPOINT_APIS,
    Adapter,
    AgentRequest,
    EndpointRefused,
    EndpointRequest,
    LaunchPlan,
    Memory,
    PlanRefused,
    channel_for,
    no_terminal,
    prompt_example,
    url_form,
    without_userinfo,
)
from amux.adapters.fallback import FallbackAdapter
from amux.envpatch import EnvPatch, chain
from amux.errors import AmuxError, InternalError, InvalidArgument
from amux.faults import local_fault
from amux.launcher import mirrors, planfiles, rundirs, session_watch, state, versions, wiring
from amux.launcher.probe import SystemProbe
from amux.launcher.supervise import RunAs
from amux.launcher.userfiles import UserFiles
from amux.launcher.writes import Write
from amux.materializer.target import Target, isolation
from amux.protocol import render
from amux.typing_light import NamedTuple

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from amux.launcher.endpoints import EndpointUrl
    from amux.launcher.window import Check



class RunRequest(NamedTuple):
    agent: str | None
    args: list[str]
    resume: str | None = None
    dry_run: bool = False
    as_user: str | None = None
    """Run the agent as this Unix user (an isolated run; the launcher must be root)."""
    pass_env: tuple[str, ...] = ()
    """Variables an isolated agent gets although they look like credentials."""
    endpoint: EndpointRequest | None = None
    """`--endpoint URL --model NAME`: the model endpoint of a new session (frozen; a resume
    reuses it, and takes it again for the user and password its URL had)."""
    window_check: bool = True
    """Compare the endpoint's context window with the agent's first request before the
    launch (`--no-window-check`: not)."""
    no_memory: str | None = None
    """A new session without memory as the user asked (`--no-memory`, or the setting that
    says so): no discovery, no protocol, no tools, the agent's own memory untouched."""
    defaults: tuple[tuple[str, str], ...] = ()
    """Each option of a new session that the user's settings gave, and where from."""


class Launch(NamedTuple):
    """Everything one `amux run` does, decided before the agent starts; never changed."""

    session: state.SessionState
    """The state a new session freezes, or the frozen state of the one resumed."""
    new: bool
    adapter: Adapter
    plan: LaunchPlan
    env: EnvPatch
    """The agent's environment as the changes it makes to the launcher's (`against`): what
    isolation or the launcher's own connection removes, then the plan's changes."""
    target: Target | None
    """The isolated run's target user, None for the launching user."""
    run_dir: rundirs.RunDir | None
    """Where the agent's connection to memory goes (None: a session without memory)."""
    agent_dir: Path
    """The session's own directory for the agent's files (for an isolated run in the
    target's home, created by the target)."""
    saved: tuple[Write, ...]
    """What freezing a new session's state creates (`state.writes`; nothing on resume)."""
    files: UserFiles
    """How the agent user's files are read and written (an isolated run: as the target,
    by a helper process that `launch` ends)."""
    window: Check | None = None
    """The endpoint's context window against the agent's first request (None: no endpoint,
    or not checked)."""
    defaults: tuple[tuple[str, str], ...] = ()
    """`RunRequest.defaults`: the options the user's settings gave, and where from."""

    @property
    def run_as(self) -> RunAs | None:
        return _run_as(self.target)

    def writes(self) -> tuple[Write, ...]:
        """What `apply` creates, in order, from the lists its writers make them from: the
        state `state.save` freezes, the run directory `rundirs.make` wires, the agent's
        directory, the plan's mirrors and files."""
        made = (*self.saved, *(() if self.run_dir is None else rundirs.writes(self.run_dir)))
        return (*made, *self._agent_dirs(made), *map(mirrors.written, self.plan.mirrors),
                *map(planfiles.written, self.plan.files))

    def _agent_dirs(self, made: tuple[Write, ...]) -> list[Write]:
        """What `files.make_dirs` makes: the agent's directory (unless `made` has it), and
        for an isolated run its parents in the target's home."""
        home = None if self.target is None else Path(self.target.home)
        parents = [] if home is None else [path for path in reversed(self.agent_dir.parents)
                                           if home in path.parents]
        mine = [] if any(entry.path == self.agent_dir for entry in made) else [
            Write(self.agent_dir, "dir", 0o700, agents=True,
                  content="the agent's files of this session")]
        return [*(Write(path, "dir", 0o700, agents=True) for path in parents), *mine]

    def report(self) -> dict[str, Any]:
        """The launch as `--dry-run` prints it (JSON): no credential in it, every URL
        without its user and password, a variable holding one redacted (`EnvPatch.shown`)."""
        plan, session, target = self.plan, self.session, self.target
        owner = "launcher" if target is None else target.name
        writes = [entry.shown(owner) for entry in self.writes()]
        report: dict[str, Any] = _shown({
            "session": session.id, "resume": not self.new, "agent": session.agent,
            "adapter": self.adapter.name,
            "as_user": None if target is None else {
                "user": target.name, "uid": target.uid, "gid": target.gid,
                "groups": target.group_names(), "home": target.home},
            "argv": list(plan.argv), "env": self.env.shown(),
            "path_prepend": list(self.env.path), "channel": plan.channel,
            "binding": session.binding, "principal": session.principal,
            "no_memory_reason": session.no_memory_reason, "defaults": dict(self.defaults),
            "protocol_version": session.protocol_version, "instructions": plan.instructions,
            "suppression": dict(plan.suppression), "agent_session": plan.agent_session,
            "files": [entry["path"] for entry in writes], "writes": writes,
            "run_dir": None if self.run_dir is None else str(self.run_dir.path),
            "mirrors": [dict(mirror._asdict()) for mirror in plan.mirrors],
            "warnings": list(plan.warnings),
            "window": None if self.window is None else self.window.shown(),
        })
        return report


def _shown(value: Any) -> Any:
    """`value` (JSON) with every URL in its strings `without_userinfo`."""
    if isinstance(value, str):
        return without_userinfo(value)
    if isinstance(value, dict):
        return {key: _shown(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_shown(item) for item in value]
    return value


def _run_as(target: Target | None) -> RunAs | None:
    return None if target is None else RunAs(target.uid, target.gid, target.groups)


def _warn(message: str) -> None:
    print(f"amux run: warning: {message}", file=sys.stderr, flush=True)


def _executable(agent: str) -> str:
    found = shutil.which(agent)
    if found is None:
        import difflib

        close = difflib.get_close_matches(agent, [name for name in ADAPTERS
                                                  if shutil.which(name)], n=1)
        if close:  # a typo of an agent that is there
            raise InvalidArgument(f"agent {agent!r} not found; did you mean "
                                  f"`amux run {close[0]}`?")
        from amux.adapters.install import install_hint

        hint = install_hint(os.path.basename(agent))
        install = (f"install it as amux is tested with it: {hint}" if hint else
                   "install it")
        raise InvalidArgument(f"agent {agent!r} not found (not on PATH and "
                              f"not an executable path); {install}; or give its path")
    return os.path.abspath(found) if os.sep in agent else found


def _agent_dir(home: Path, session_id: str, target: Target | None) -> Path:
    """Where a session keeps the agent's own files: its state directory, or for an
    isolated run a directory in the target's home (the target cannot enter ours)."""
    if target is None:
        return state.session_dir(home, session_id)
    return Path(target.home) / ".amux" / "sessions" / session_id


def _discover(home: Path, request: RunRequest, adapter: Adapter,
              target: Target | None) -> tuple[wiring.Binding | None, list[str]]:
    """The binding a new session freezes, from the Hub (read-only), or the warning why
    it has none. A dry run does not start the Hub."""
    if adapter.channel == "none" or request.no_memory is not None:
        return None, []
    try:
        if target is None:
            return wiring.resolve(home, start_hub=not request.dry_run), []
        return wiring.resolve_for(home, target.name, start_hub=not request.dry_run), []
    except wiring.NoMemory as reason:
        return None, [str(reason)]


LAST = "last"
"""`amux run --resume last [AGENT]`: the newest session started in this directory (of
that agent) that can be resumed."""


def _resumed(home: Path, request: RunRequest) -> tuple[state.SessionState, Adapter]:
    assert request.resume is not None
    frozen = _last(home, request.agent) if request.resume == LAST else _named(home, request)
    if request.no_memory is not None and frozen.binding is not None:
        raise InvalidArgument(f"session {frozen.id} started with memory, and a resume keeps "
                              "its frozen protocol and suppression; --no-memory is for a new "
                              f"session (`amux run --no-memory {frozen.adapter} -- …`)")
    if not frozen.resumable:
        raise InvalidArgument(f"session {frozen.id} cannot be resumed: "
                              f"it was {frozen.not_resumable_reason}; start a new session "
                              f"instead (`amux run {frozen.agent} -- …`)")
    adapter: Adapter = ADAPTERS.get(frozen.adapter, FallbackAdapter())
    if _agent_session_unknown(frozen, adapter):
        raise InvalidArgument(f"session {frozen.id} never recorded "
                              f"{frozen.adapter}'s own session id, so it cannot be resumed")
    given = _frozen(None if request.endpoint is None
                    else _agents_url(request.endpoint, adapter).endpoint)
    endpoint = frozen.endpoint
    if given is not None and given not in (endpoint, _anonymous(endpoint)):
        started = ("the agent's own model" if endpoint is None else
                   f"--endpoint {endpoint['url']} --model {endpoint['model']}")
        raise InvalidArgument(f"session {frozen.id} started with {started}, "
                              "and a resume reuses it; resume without --endpoint, or start a new "
                              "session for another model")
    if endpoint is not None and endpoint.get("credentials") and given != endpoint:
        url = str(endpoint["url"])
        raise InvalidArgument(f"session {frozen.id}'s --endpoint {url} had a "
                              "user and password, which amux does not keep; give them again: "
                              f"amux run --resume {frozen.id} --endpoint "
                              f"{url.replace('://', '://USER:PASSWORD@', 1)} --model "
                              f"{endpoint['model']}")
    if request.as_user not in (None, frozen.as_user):
        raise InvalidArgument(f"session {frozen.id} runs as "
                              f"{frozen.as_user or 'the launching user'}, not {request.as_user}")
    return frozen, adapter


def _frozen(endpoint: EndpointRequest | None) -> dict[str, str | bool | None] | None:
    return None if endpoint is None else state.frozen_endpoint(endpoint._asdict())


def _anonymous(frozen: dict[str, str | bool | None] | None) -> dict[str, str | bool | None] | None:
    """A frozen endpoint as it is given again without its user and password."""
    return None if frozen is None else {k: v for k, v in frozen.items() if k != "credentials"}


def _frozen_endpoint(session: state.SessionState,
                     given: EndpointRequest | None) -> EndpointRequest | None:
    """The session's endpoint; for one with `credentials`, the URL `given` with them
    (`_resumed` checked it is the frozen one)."""
    frozen = session.endpoint
    if frozen is None:
        return None
    api = frozen.get("api")
    key_env = frozen.get("key_env")
    url = given.url if given is not None and frozen.get("credentials") else str(frozen["url"])
    return EndpointRequest(url, str(frozen["model"]),
                           next((kind for kind in ENDPOINT_APIS if kind == api), None),
                           None if key_env is None else str(key_env))


def _last(home: Path, agent: str | None) -> state.SessionState:
    """The session `--resume last` means, named on stderr (the user did not name it)."""
    here = os.getcwd()
    started = [session for session in state.listing(home, _warn) if session.cwd == here
               and (agent is None or agent in (session.adapter, os.path.basename(session.agent)))]
    of = "" if agent is None else f" of {agent}"
    if not started:
        raise InvalidArgument(f"no amux session{of} was started in {here}; "
                              "`amux sessions list` shows them all, and `amux run --resume ID` "
                              "resumes one")
    resumable = [session for session in started if _resumable(session)]
    picked = (resumable or started)[-1]  # `listing` is in start-time order
    print(f"amux run: resuming session {picked.id} ({os.path.basename(picked.agent)}, started "
          f"{time.strftime('%Y-%m-%d %H:%M', time.localtime(picked.created_at))}), the newest "
          f"resumable one{of} started here", file=sys.stderr, flush=True)
    return picked


def _named(home: Path, request: RunRequest) -> state.SessionState:
    """The session `--resume ID` names: an amux session, or the amux session whose agent
    session ID is (named on stderr); an ID of neither is refused, naming the agent's own
    command that resumes it (a session started outside amux never adopts its wiring)."""
    assert request.resume is not None
    ref = request.resume
    if state.saved(home, ref):
        if request.agent is not None:
            raise InvalidArgument(f"--resume {ref} resumes that session's own agent: leave "
                                  "AGENT out (an AGENT goes with --resume last: the newest "
                                  "session of that agent here)")
        return state.load(home, ref)
    started = [each for each in state.listing(home, _warn) if each.agent_session == ref]
    if started and request.agent in (None, started[-1].adapter):
        print(f"amux run: {ref} is {started[-1].adapter}'s own id of amux session "
              f"{started[-1].id}: resuming that", file=sys.stderr, flush=True)
        return started[-1]
    raise InvalidArgument(_not_ours(ref, request.agent))


def _not_ours(ref: str, agent: str | None) -> str:
    """Why `--resume REF` names no amux session, and the agent's own command for it: the
    named AGENT's, else that of the agent that keeps a session REF (`kept_session`), else
    every agent's."""
    import shlex

    from amux.launcher.userfiles import matching

    adapters = ([for_agent(agent)] if agent is not None else
                [each for each in ADAPTERS.values()
                 if (where := each.kept_session(ref, os.environ)) and matching(*where)]
                or list(ADAPTERS.values()))
    commands = [shlex.join((os.path.basename(agent or each.name), *own)) for each in adapters
                if (own := each.own_resume(ref)) is not None]
    said = (f"no amux session {ref!r}: `amux run --resume` takes the id of a session amux "
            "started (`amux sessions list`; `last`: the newest here)")
    if not commands:
        return f"{said}; amux knows no way to resume a session of {agent}"
    who = adapters[0].display_name if len(commands) == 1 else "the agent that started it"
    return (f"{said}. A session started outside amux has no instructions or memory wiring "
            f"amux froze, so amux cannot resume it: resume it with {who} itself, without "
            "amux memory: " + " or ".join(f"`{command}`" for command in commands))


def _resumable(session: state.SessionState) -> bool:
    return session.resumable and not _agent_session_unknown(
        session, ADAPTERS.get(session.adapter, FallbackAdapter()))


def _agent_session_unknown(session: state.SessionState, adapter: Adapter) -> bool:
    """The agent has sessions of its own, and this one's id was never learned: there is
    nothing a resume could name."""
    return session.agent_session is None and adapter.tracks_sessions


def prepare(home: Path, request: RunRequest, client: Path) -> Launch:
    """The complete launch; starts nothing but the Hub on demand (and, for an isolated
    run, the helper acting as the target: the caller closes `Launch.files`), writes
    nothing."""
    resumed = _resumed(home, request) if request.resume is not None else None
    as_user = resumed[0].as_user if resumed is not None else request.as_user
    target = Target.lookup(as_user) if as_user else None
    files = UserFiles.of(target)  # first: its helper is forked before any thread starts
    try:
        return _prepare(home, request, client, resumed, target, files)
    except BaseException:
        files.close()
        raise


def _check_endpoint(request: RunRequest, resumed: tuple[state.SessionState, Adapter] | None,
                    adapter: Adapter, changed: tuple[str, str] | None) -> None:
    """Refuse, before anything starts, a launch against a model endpoint where nothing
    answers, or where what answers does not speak the API the agent is pointed at (the
    agent would hang, or fail with a message about something else), in one line, which
    also says what was `changed` in the URL as given (the URL, what); a dry run starts
    nothing and asks nothing here (its window check says when nothing answers)."""
    endpoint = (request.endpoint if resumed is None
                else _frozen_endpoint(resumed[0], request.endpoint))
    if endpoint is None or request.dry_run:
        return
    from amux.launcher import endpoints  # urllib: endpoint launches only

    given = (_given(endpoint, resumed) if changed is None
             else f"--endpoint {changed[0]} ({changed[1]})")
    problem = endpoints.unreachable(endpoint.url)
    if problem:
        fix = "or point --endpoint at one that runs" if resumed is None else "then resume again"
        raise InvalidArgument(f"{given}: {problem}; start the model server there (Ollama: "
                              f"`ollama serve`), {fix}")
    url = _agents_url(endpoint, adapter)
    key = os.environ.get(endpoint.key_env) if endpoint.key_env else None
    answered = endpoints.not_the_api(url, key)
    if answered and url.api is not None:
        raise EndpointRefused(f"{given}: no model server answers there: {answered}; "
                              f"{adapter.display_name} needs "
                              f"{endpoints.QUESTIONS[url.api].speaker} at "
                              f"{url_form(adapter.endpoint_paths[url.api])}")


def _refuse_without_terminal(adapter: Adapter, args: tuple[str, ...]) -> None:
    """Refuse, before anything starts, an interactive start of an agent that would draw its
    UI into a pipe and wait there for good (`without_terminal` `hangs`: OpenCode)."""
    if adapter.without_terminal != "hangs" or not adapter.starts_ui(args):
        return
    pipes = [name for fd, name in ((0, "stdin"), (1, "stdout")) if not os.isatty(fd)]
    if pipes:
        raise PlanRefused(f"{adapter.display_name} draws its interactive UI on the terminal, "
                          f"and {' and '.join(pipes)} {'is' if len(pipes) == 1 else 'are'} not "
                          "one here: it would draw into the pipe and wait for good; run it in "
                          f"a terminal, or give it a prompt: {prompt_example(adapter)}")


def _agents_url(endpoint: EndpointRequest, adapter: Adapter) -> EndpointUrl:
    """`endpoint` in the form its agent takes (`endpoints.endpoint_url`)."""
    from amux.launcher.endpoints import endpoint_url

    return endpoint_url(endpoint, adapter.display_name, adapter.endpoint_paths)


def _given(endpoint: EndpointRequest, resumed: tuple[state.SessionState, Adapter] | None) -> str:
    """How a refusal names the endpoint: as given, or as the resumed session's."""
    url = without_userinfo(endpoint.url)
    return f"--endpoint {url}" if resumed is None else f"session {resumed[0].id}'s --endpoint {url}"


def _check_window(request: RunRequest, resumed: tuple[state.SessionState, Adapter] | None,
                  adapter: Adapter, endpoint: EndpointRequest | None, memory: bool,
                  env: Mapping[str, str]) -> Check | None:
    """The endpoint's context window against the agent's first request (its adapter's
    measure), refused (`EndpointRefused`) when the window cannot hold it: the server would
    cut its start, the instructions and the protocol, silently. A dry run asks too, but
    loads no model (an Ollama model not loaded yet leaves the window unknown)."""
    if endpoint is None or not request.window_check:
        return None
    from amux.launcher import window  # urllib: endpoint launches only

    prompt = window.first_request(adapter, memory)
    if prompt is None:
        return None
    key = env.get(endpoint.key_env) if endpoint.key_env else None
    found = window.probe(endpoint.url, endpoint.model,
                         endpoint.api or ENDPOINT_API_OF[adapter.model_api], key,
                         load_seconds=None if request.dry_run else window.LOAD_SECONDS)
    check = window.Check(endpoint.model, prompt, found)
    refused = check.refused()
    if refused:
        again = "launch again" if resumed is None else "resume again"
        raise EndpointRefused(f"{_given(endpoint, resumed)}: {refused}; then {again} "
                              "(`--no-window-check` launches anyway)")
    return check


def _prepare(home: Path, request: RunRequest, client: Path,
             resumed: tuple[state.SessionState, Adapter] | None, target: Target | None,
             files: UserFiles) -> Launch:
    warnings: list[str] = []
    if resumed is not None:
        adapter = resumed[1]
    else:
        assert request.agent is not None
        adapter = for_agent(request.agent)
    if not request.dry_run:
        _refuse_without_terminal(adapter, tuple(request.args))
    changed = None
    if request.endpoint is not None:
        given = without_userinfo(request.endpoint.url)
        agents = _agents_url(request.endpoint, adapter)
        request = request._replace(endpoint=agents.endpoint)
        if agents.changed and resumed is None:  # a resume's given URL only carries a password
            changed = (given, agents.changed)
    _check_endpoint(request, resumed, adapter, changed)
    if changed:
        _warn(f"--endpoint {changed[0]}: {changed[1]}")
    if resumed is not None:
        session = resumed[0]
        executable = _executable(session.agent)
    else:
        assert request.agent is not None
        executable = _executable(request.agent)
        binding, warnings = _discover(home, request, adapter, target)
        session_id = state.new_session_id()
        protocol = (render.render(adapter.channel)
                    if binding and adapter.channel != "none" else None)
        no_memory = request.no_memory or next(iter(warnings), None) or (
            f"no memory capability for {os.path.basename(request.agent)}: amux has no "
            "adapter for it" if adapter.channel == "none" else None)
        session = state.SessionState(
            id=session_id, agent=request.agent, adapter=adapter.name,
            adapter_version=None,
            channel="none", binding=binding.binding if binding else None,
            principal=binding.principal if binding else None,
            protocol_version=render.version() if protocol else None, protocol=protocol,
            instructions=None, suppression={}, agent_session=None,
            created_at=time.time(), cwd=os.getcwd(),
            as_user=target.name if target else None,
            endpoint=_frozen(request.endpoint),
            no_memory_reason=None if protocol else no_memory)
    new = request.resume is None
    endpoint = _frozen_endpoint(session, request.endpoint)
    agent_dir = _agent_dir(home, session.id, target)
    if target is None:
        base = wiring.LAUNCHER_PATCH  # never the launcher's own token
    else:
        resets = chain(each.isolated_env(target.home)  # every agent's, for any agent
                       for each in ADAPTERS.values())
        key = (endpoint.key_env,) if endpoint is not None and endpoint.key_env else ()
        base = isolation(os.environ, target, (*request.pass_env, *key), resets)
    base_env = base.apply(os.environ)
    version = session.adapter_version
    if new:  # asked as the agent will run; a dry run starts nothing: a version known before
        version = versions.cached_version(home, adapter, executable, base_env,
                                          _run_as(target), ask=not request.dry_run)
        channel = channel_for(adapter, version)  # an agent that gained MCP in some version
        if session.protocol is not None and channel != "none" and channel != adapter.channel:
            session = session._replace(protocol=render.render(channel))
        if not request.dry_run:
            session = session._replace(adapter_version=version)
    run_dir = memory = None
    if session.binding is not None and session.protocol is not None:
        if target is None:
            run_dir, mcp = rundirs.plain(home, session.id), client
        else:
            run_dir = rundirs.isolated(session.id, (target.uid, target.gid))
            mcp = run_dir.bin_dir / "amux"
        memory = Memory(protocol=session.protocol, mcp_command=(str(mcp), "memory", "mcp"),
                        env={"AMUX_MEMORY_CONFIG": str(run_dir.config)},
                        bin_dir=str(run_dir.bin_dir))
    if endpoint is not None and endpoint.key_env and endpoint.key_env not in base_env:
        raise InvalidArgument(f"--endpoint-key-env {endpoint.key_env}: it is "
                              "not set in this environment; export the endpoint's key in it, or "
                              "leave the option out for an endpoint that needs no key")
    # The user's own instructions matter only to merge the protocol after them; a dry run
    # starts nothing, not even the agent to ask it, and writes no cache; an isolated run
    # asks and reads as the target.
    probe = SystemProbe(base_env, os.getcwd(), run_as=_run_as(target),
                        executable=None if request.dry_run else executable,
                        cache=None if request.dry_run else home / "cache" / "probe.json",
                        files=files)
    user = (adapter.user_instructions(tuple(request.args), probe)
            if new and memory is not None else ())
    settings = adapter.user_settings(tuple(request.args), probe)
    plan = adapter.plan(AgentRequest(
        executable=executable, args=tuple(request.args), memory=memory,
        user_instructions=user,
        frozen_instructions=None if new else session.instructions,
        agent_session=(adapter.new_session_ref(session.id, str(agent_dir)) if new
                       else session.agent_session),
        resume=not new, files_dir=str(agent_dir), endpoint=endpoint, user_settings=settings,
        version=version))
    plan = plan._replace(warnings=(*warnings, *probe.warnings, *plan.warnings))
    checked = _check_window(request, resumed, adapter, endpoint, memory is not None, base_env)
    if new:
        session = session._replace(
            channel=plan.channel, instructions=plan.instructions,
            suppression=dict(plan.suppression), warnings=plan.warnings,
            agent_session=plan.agent_session, resumable=plan.not_resumable is None,
            not_resumable_reason=plan.not_resumable)
    return Launch(session, new, adapter, plan, base.then(plan.env).against(os.environ),
                  target, run_dir, agent_dir,
                  state.writes(home, session.id) if new else (), files, checked,
                  request.defaults)


def launch(home: Path, request: RunRequest) -> int:
    """Run the agent to completion; its exit status (128+N when killed by signal N)."""
    client = wiring.installed_client()
    planned = prepare(home, request, client)
    with planned.files:
        if request.dry_run:
            print(json.dumps(planned.report(), indent=2, ensure_ascii=False))
            return 0
        return apply(home, planned, client)


def apply(home: Path, launch: Launch, client: Path) -> int:
    """Act on `launch`: freeze, wire, write, supervise, learn, clean up; the exit status."""
    from amux.launcher.supervise import supervise

    session, plan = launch.session, launch.plan
    if launch.new:
        state.save(home, session)
    for warning in plan.warnings:
        _warn(warning)
    said = None if launch.window is None else launch.window.said()
    if said and session.endpoint is not None:
        _warn(f"--endpoint {session.endpoint['url']}: {said}")
    issued = _wire(home, launch, client)
    hub_before = None if issued is None else wiring.hub_instance(issued)
    if hub_before is not None and hub_before.version != __version__:
        _warn(f"the Hub runs amux {hub_before.version} and this is amux {__version__} (it "
              "was upgraded or reinstalled since the Hub started): restart the Hub when no "
              "session uses it: amux hub stop && amux hub start")
    hub_after = None
    files = launch.files
    try:
        env = launch.env.apply(os.environ)
        spec = (launch.adapter.session_files(env, str(launch.agent_dir))
                if launch.new and session.resumable and session.agent_session is None
                else None)
        try:
            files.make_dirs(str(launch.agent_dir))
            for warning in files.make_mirrors(plan.mirrors):
                _warn(warning)
            files.write_files(plan.files)  # before every launch, from the plan
            watch = session_watch.SessionWatch(spec, files) if spec is not None else None
        except OSError as exc:
            raise _unprepared(exc, launch.agent_dir) from None
        started, started_at = time.monotonic(), time.time()
        try:
            status = supervise(list(plan.argv), env, run_as=launch.run_as,
                               on_start=None if watch is None else watch.start)
        finally:
            if issued is not None and hub_before is not None:
                hub_after = wiring.hub_instance(issued)
            # Revoked first: nothing done in the agent user's files afterwards (which may
            # fail, or be stopped) can leave the agent's token valid.
            _unwire(issued, launch.run_dir)
            issued = None
            if watch is not None:
                session = _learn_session(home, session, watch, plan.argv)
            elif launch.new:
                session = _kept(home, session, launch.adapter, files, env)
            try:
                for warning in files.restore_mirrors(plan.mirrors, plan.files):
                    _warn(warning)
            except OSError as exc:
                _warn(f"the agent's mirrors were not restored: {exc}; the next launch "
                      "restores them")
        seconds = time.monotonic() - started
        idle = launch.new and launch.session.resumable and not _resumable(session)
        cause = _exit_cause(launch, env, status, seconds, idle)
        print(closing_line(session, status, launch.adapter, seconds, cause),
              file=sys.stderr, flush=True)
        if hub_before is not None and hub_after != hub_before:
            print(hub_line(session.id, hub_before.pid, hub_after and hub_after.pid,
                           started_at), file=sys.stderr, flush=True)
        return status
    finally:
        _unwire(issued, launch.run_dir)


def _unprepared(error: OSError, agent_dir: Path) -> AmuxError:
    """Why the agent's files could not be made, by type: a full or read-only disk
    (`storage_unavailable`), a path of the agent user's that cannot hold them (a link, a
    file: `invalid_argument`), or the helper acting as the target that failed or was
    stopped (no errno: `internal`)."""
    doing = f"cannot prepare {agent_dir} for the agent"
    fault = local_fault(error, doing)
    if fault is not None:
        return fault
    return (InvalidArgument if error.errno else InternalError)(f"{doing}: {error}")


def _unwire(issued: wiring.Issued | None, run_dir: rundirs.RunDir | None) -> None:
    """Revoke the agent's token and remove its run directory (kept, with a warning, when
    the token could not be revoked, so the next launch revokes it)."""
    if issued is None or run_dir is None:
        return
    unrevoked = wiring.revoke(issued)
    if unrevoked is not None:
        _warn(unrevoked)
    elif not rundirs.remove(run_dir.path):
        _warn(f"{run_dir.path} could not be removed (its files changed meanwhile); its "
              "token is revoked, and the next `amux run` removes it")


def _wire(home: Path, launch: Launch, client: Path) -> wiring.Issued | None:
    """The agent's delegated token, in its run directory; None (and a warning: the
    session's memory calls will fail) when there is none."""
    run_dir, session = launch.run_dir, launch.session
    if run_dir is None or session.binding is None:
        return None
    problem = None
    launched = {"agent": session.adapter, "session": session.id}  # for memory history
    try:
        if launch.target is None:
            issued = wiring.delegate(home, wiring.Binding(session.principal or "",
                                                          session.binding), launched)
        else:
            issued, problem = wiring.grant_for(home, launch.target.name, session.binding,
                                               launched)
    except wiring.NoMemory as reason:
        _warn(f"{reason}; memory calls of this session will fail")
        return None
    try:
        rundirs.make(run_dir, issued.token, client, home / "cache")
    except BaseException:
        wiring.revoke(issued)  # no token left behind by a run directory never used
        rundirs.remove(run_dir.path)
        raise
    if problem is None and launch.target is None and not launch.new:
        problem = wiring.check(run_dir.config)
    if problem:
        _warn(problem)
    return issued


QUICK_EXIT_SECONDS = 5.0
"""An agent that fails within this long most likely never reached its model."""


def closing_line(session: state.SessionState, status: int, adapter: Adapter,
                 seconds: float, cause: str | None = None) -> str:
    """What amux says when the agent ended: the amux session and how to resume it (the
    agent's own resume hint, `claude --resume <uuid>`, would bypass the frozen state).
    An exit status the agent's own code gives a meaning (`Adapter.exit_meanings`) is said
    as such. Else the `cause` the launch told (`_exit_cause`), of an exit 0 too; after a
    quick failure with none, no cause is claimed, only what to do if the agent's own message
    says it could not reach its model."""
    ended = f"amux run: session {session.id} ended (exit {status} after {seconds:.1f} s)"
    if not session.resumable:
        line = f"{ended}; it cannot be resumed: {session.not_resumable_reason}"
    elif _agent_session_unknown(session, adapter):
        line = f"{ended}; it cannot be resumed: {session.adapter}'s own session id is unknown"
    else:
        line = f"{ended}; resume it with: amux run --resume {session.id}"
    agent = os.path.basename(session.agent)
    stopped = _stopped_by(status)
    if stopped:  # asked to stop (Ctrl-C, a kill): no failure to explain
        return f"{line}\namux run: {agent} was stopped by {stopped}"
    meaning = adapter.exit_meanings.get(status) if status else None
    if meaning:  # the agent's own code says why: no guess about its model
        return f"{line}\namux run: {agent} exited {status}: {meaning}"
    quick = seconds < QUICK_EXIT_SECONDS
    failed = (f"amux run: {agent} exited 0 without running a prompt" if status == 0
              else f"amux run: {agent} failed within {QUICK_EXIT_SECONDS:.0f} s" if quick
              else f"amux run: {agent} failed")
    if cause:
        return f"{line}\n{failed}: {cause}"
    if status == 0 or not quick:
        return line
    if session.endpoint is not None:
        fix = (f"check that {session.endpoint['url']} serves the model "
               f"{session.endpoint['model']!r}")
    else:
        fix = adapter.quick_exit_hint or "check its own set-up: login, API key, model endpoint"
    return f"{line}\n{failed}; see its own message above. If it could not reach its model: {fix}"


STOP_SIGNALS = {signal.SIGINT: "SIGINT (Ctrl-C)", signal.SIGTERM: "SIGTERM",
                signal.SIGHUP: "SIGHUP (its terminal went away)",
                signal.SIGQUIT: "SIGQUIT", signal.SIGKILL: "SIGKILL"}
"""The signals that stop an agent on purpose, as the closing line names them."""


def _stopped_by(status: int) -> str | None:
    """The stop signal an exit status says the agent ended on (128+N), else None."""
    try:
        return STOP_SIGNALS.get(signal.Signals(status - 128)) if status > 128 else None
    except ValueError:
        return None


def hub_line(session_id: str, before: int, after: int | None, started_at: float) -> str:
    """What failed when the Hub stopped or restarted while the agent ran: its memory calls
    meanwhile (`hub_unreachable`), so what it said it saved since may not be in memory;
    and what to do about it."""
    since = time.strftime("%Y-%m-%dT%H:%M", time.localtime(started_at))
    check = (f"`amux memory log --since {since}` shows what this session saved; resume "
             f"it to redo the rest: amux run --resume {session_id}")
    if after is None:
        return ("amux run: the Hub stopped answering during this session: the agent's "
                "memory calls after that failed (hub_unreachable), so what it said it saved "
                "since is not in memory. Start the Hub (`amux hub start`, or any `amux "
                f"memory` command for the local one), then {check}")
    return (f"amux run: the Hub restarted during this session (pid {before}, now {after}): "
            "the agent's memory calls while it was down failed (hub_unreachable). "
            f"{check[:1].upper()}{check[1:]}")


def _exit_cause(launch: Launch, env: Mapping[str, str], status: int, seconds: float,
                idle: bool) -> str | None:
    """The cause amux can tell of an agent that failed: an interactive start with no
    terminal (`starts_ui`, stdin not one), whenever the agent had no prompt (it kept no
    session, `idle`, or stdin held none); else, within seconds, the endpoint of the session
    no longer answers, that start, or what the adapter reads from the launch (through a
    probe as the agent's user: an isolated run's files are never read by root). Of an exit
    0, only a start with no prompt of an agent that then ends having done nothing
    (`without_terminal` `ends`: Pi)."""
    adapter, argv = launch.adapter, launch.plan.argv[1:]
    no_ui = not os.isatty(0) and adapter.starts_ui(argv)
    unprompted = no_ui and (idle or _nothing_on_stdin())
    if status == 0:
        return no_terminal(adapter) if unprompted and adapter.without_terminal == "ends" \
            else None
    if unprompted:
        return no_terminal(adapter)
    if seconds >= QUICK_EXIT_SECONDS:
        return None
    endpoint = launch.session.endpoint
    if endpoint is not None:
        from amux.launcher.endpoints import unreachable

        problem = unreachable(str(endpoint["url"]))
        if problem:
            return (f"its endpoint stopped answering: {problem}; start the model server "
                    f"there, then resume: amux run --resume {launch.session.id}")
    if no_ui:
        return no_terminal(adapter)
    probe = SystemProbe(env, os.getcwd(), run_as=launch.run_as, files=launch.files)
    if launch.run_as is None:  # an isolated run's package is the target user's to read
        old_node = _node_too_old(launch.plan.argv[0], probe)
        if old_node:
            return old_node
    try:
        return adapter.quick_exit_cause(argv, probe)
    except OSError:  # the helper acting as the agent's user failed or was stopped: unknown
        return None


def _node_too_old(executable: str, probe: SystemProbe) -> str | None:
    """The cause of a quick failure when the agent's npm package declares a Node.js its PATH
    does not have (Pi 1.x needs 22.19 and dies at start on 20), as `amux doctor` says it."""
    from amux.doctor.agents import node_check, node_fix

    found = shutil.which(executable, path=probe.env.get("PATH", os.defpath))
    node = node_check(found, probe) if found else None
    if node is None or node["satisfied"] is not False:
        return None
    return (f"its package declares node {node['requires']}, and the node on PATH is "
            f"{node['found']}: {node_fix(node['requires'])}")


def _nothing_on_stdin() -> bool:
    """Whether stdin holds nothing an agent could read a prompt from: closed, /dev/null (a
    character device that is no terminal) or an empty file. A pipe may hold one."""
    try:
        info = os.fstat(0)
    except OSError:
        return True
    return ((stat.S_ISCHR(info.st_mode) and not os.isatty(0))
            or (stat.S_ISREG(info.st_mode) and info.st_size == 0))


def _kept(home: Path, session: state.SessionState, adapter: Adapter, files: UserFiles,
          env: Mapping[str, str]) -> state.SessionState:
    """A new session whose agent never kept the session amux chose for it up front (it
    failed before starting one) is saved as not resumable: there is nothing to resume,
    and offering it would only start the agent on an id it does not know."""
    where = (adapter.kept_session(session.agent_session, env)
             if session.resumable and session.agent_session else None)
    if where is None:
        return session
    try:
        if files.matching(*where):
            return session
    except OSError:  # cannot tell: it stays resumable
        return session
    gone = session._replace(resumable=False, not_resumable_reason=(
        f"ended before {os.path.basename(session.agent)} kept a session of its own, so "
        "there is nothing to resume"))
    state.save(home, gone)
    return gone


def _learn_session(home: Path, session: state.SessionState, watch: session_watch.SessionWatch,
                   argv: tuple[str, ...]) -> state.SessionState:
    """The session with the agent's own session that its first run created, as the adapter
    picks it from what the watch saw (saved); none, and a warning, when it cannot tell."""
    ref, warning = watch.finish(list(argv), os.getcwd())
    if warning:
        _warn(warning)
    if ref is None and not warning:
        return session
    learned = session._replace(agent_session=ref,
                               warnings=(*session.warnings, *([warning] if warning else [])))
    state.save(home, learned)
    return learned
