"""`amux run`: one launch of an agent with memory, from discovery to cleanup (SPEC §6).

A new execution resolves the binding once (bounded; the local default Hub is
started on demand), renders the protocol for the adapter's channel, lets the
adapter plan the launch, writes the session start state, wires a delegated
token into a run directory, supervises the agent (no exec), and cleans up
however the agent ends. `--resume ID` replays the frozen state: the same
binding, protocol, instructions and suppression, with a fresh token. Discovery
failures are warnings and a session without memory; they never block the agent.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from amux.adapters import ADAPTERS, for_agent
from amux.adapters.base import Adapter, AgentRequest, LaunchPlan, Memory
from amux.adapters.fallback import FallbackAdapter
from amux.client.wire import ClientError
from amux.launcher import agent_config, planfiles, rundirs, state, wiring
from amux.launcher.probe import SystemProbe
from amux.launcher.supervise import RunAs
from amux.materializer.rundir import materialize, memory_dir, remove
from amux.materializer.target import Target, isolated_env
from amux.memory.durable import write_file_atomic
from amux.protocol import render

VERSION_TIMEOUT_SECONDS = 10.0


@dataclass(frozen=True)
class RunRequest:
    agent: str | None
    args: list[str]
    resume: str | None = None
    dry_run: bool = False
    as_user: str | None = None
    """Run the agent as this Unix user (an isolated run; the launcher must be root)."""
    pass_env: tuple[str, ...] = ()
    """Variables an isolated agent gets although they look like credentials."""


@dataclass
class Prepared:
    """Everything decided before the agent starts."""

    session: state.SessionState
    plan: LaunchPlan
    adapter: Adapter
    binding: wiring.Binding | None
    new: bool
    base_env: dict[str, str]
    """The environment the agent starts from, before the plan's changes."""
    target: Target | None = None
    grant: wiring.Grant | None = None
    """An isolated run's delegated token (issued at discovery)."""
    agent_files: Path | None = None
    """An isolated session's own directory in the target's home (Pi's session file)."""
    memory: Memory | None = None
    """How the agent reaches memory (None: a session without memory)."""


def _warn(message: str) -> None:
    print(f"amux run: warning: {message}", file=sys.stderr, flush=True)


def _executable(agent: str) -> str:
    found = shutil.which(agent)
    if found is None:
        raise ClientError("invalid_argument", f"agent {agent!r} not found (not on PATH and "
                          "not an executable path); install it (e.g. `npm ci --prefix "
                          "fixtures/npm` in an amux checkout) or give its path")
    return os.path.abspath(found) if os.sep in agent else found


def _version(home: Path, adapter: Adapter, executable: str) -> str | None:
    """`AGENT --version`, remembered per binary (path, size, mtime): a Node CLI takes
    a few hundred ms to say it, and every launch records it."""
    if isinstance(adapter, FallbackAdapter):
        return None
    real = os.path.realpath(executable)
    try:
        st = os.stat(real)
    except OSError:
        return None
    key = f"{real}:{st.st_size}:{st.st_mtime_ns}"
    cache_path = home / "cache" / "agent-versions.json"
    try:
        cache = json.loads(cache_path.read_text())
    except (OSError, ValueError):
        cache = {}
    if isinstance(cache, dict) and isinstance(cache.get(key), str):
        return str(cache[key])
    try:
        done = subprocess.run([executable, "--version"], capture_output=True, text=True,
                              timeout=VERSION_TIMEOUT_SECONDS, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return None
    # Whichever stream it uses: Pi prints its version on stderr when stdin is no terminal.
    version = ((done.stdout.strip() or done.stderr.strip()).splitlines() or [""])[0]
    if done.returncode != 0 or not version:
        return None
    cache = {k: v for k, v in (cache.items() if isinstance(cache, dict) else ())
             if not k.startswith(f"{real}:")}
    cache[key] = version
    cache_path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    write_file_atomic(cache_path, json.dumps(cache, indent=1).encode() + b"\n")
    return version




def _agent_files(home: Path, session_id: str, target: Target | None) -> Path:
    """Where a session keeps the agent's own files: its state directory, or for an
    isolated run a directory in the target's home (the target cannot enter ours)."""
    if target is None:
        return state.session_dir(home, session_id)
    return Path(target.home) / ".amux" / "sessions" / session_id


def prepare(home: Path, request: RunRequest, client: Path) -> Prepared:
    """Resolve, plan and (unless dry-run) freeze; starts nothing but the Hub on demand."""
    warnings: list[str] = []
    grant = None
    if request.resume is not None:
        frozen = state.load(home, request.resume)
        if not frozen.resumable:
            raise ClientError("invalid_argument", f"session {frozen.id} cannot be resumed: "
                              f"it was {frozen.not_resumable_reason}; start a new session "
                              f"instead (`amux run {frozen.agent} -- …`)")
        adapter = ADAPTERS.get(frozen.adapter, FallbackAdapter())
        executable = _executable(frozen.agent)
        if frozen.agent_session is None and not isinstance(adapter, FallbackAdapter):
            raise ClientError("invalid_argument", f"session {frozen.id} never recorded "
                              f"{frozen.adapter}'s own session id, so it cannot be resumed")
        if request.as_user not in (None, frozen.as_user):
            raise ClientError("invalid_argument", f"session {frozen.id} runs as "
                              f"{frozen.as_user or 'the launching user'}, not {request.as_user}")
        target = Target.lookup(frozen.as_user) if frozen.as_user else None
        binding = (wiring.Binding(frozen.principal or "", frozen.binding)
                   if frozen.binding is not None else None)
        session = frozen
        new = False
    else:
        assert request.agent is not None
        adapter = for_agent(request.agent)
        executable = _executable(request.agent)
        target = Target.lookup(request.as_user) if request.as_user else None
        binding = None
        if adapter.channel != "none":
            try:
                if target is None:
                    binding = wiring.resolve(home, start_hub=not request.dry_run)
                elif request.dry_run:
                    binding = wiring.preview_for(home, target.name)
                else:
                    grant, _ = wiring.grant_for(home, target.name, None)
                    binding = wiring.Binding(grant.principal, grant.binding)
            except wiring.NoMemory as reason:
                warnings.append(str(reason))
        session_id = state.new_session_id()
        protocol = render.render(adapter.channel) if binding and adapter.channel != "none" \
            else None
        session = state.SessionState(
            id=session_id, agent=request.agent, adapter=adapter.name,
            adapter_version=None if request.dry_run else _version(home, adapter, executable),
            channel="none", binding=binding.binding if binding else None,
            principal=binding.principal if binding else None,
            protocol_version=render.version() if protocol else None, protocol=protocol,
            instructions=None, suppression={},
            agent_session=adapter.new_session_ref(
                session_id, str(_agent_files(home, session_id, target))),
            created_at=time.time(), cwd=os.getcwd(),
            as_user=target.name if target else None)
        new = True
    base_env = (isolated_env(os.environ, target, request.pass_env) if target
                else wiring.agent_env(os.environ))  # never the launcher's own token
    memory = None
    if session.binding is not None and session.protocol is not None:
        if target is None:
            config, bin_dir = wiring.run_paths(home, session.id)
            mcp = client
        else:
            isolated = memory_dir(session.id)
            config, bin_dir = isolated / rundirs.CONFIG_NAME, isolated / "bin"
            mcp = bin_dir / "amux"
        memory = Memory(protocol=session.protocol, mcp_command=(str(mcp), "memory", "mcp"),
                        env={"AMUX_MEMORY_CONFIG": str(config)}, bin_dir=str(bin_dir))
    # The user's own instructions matter only to merge the protocol after them; a dry run
    # starts nothing, not even the agent to ask it, and an isolated run asks as the target.
    run_as = None if target is None else RunAs(target.uid, target.gid, target.groups)
    probe = SystemProbe(base_env, os.getcwd(), run_as=run_as,
                        executable=None if request.dry_run else executable)
    try:
        user = (adapter.user_instructions(tuple(request.args), probe)
                if new and memory is not None else ())
    except ValueError as problem:
        raise ClientError("invalid_argument", str(problem)) from None
    warnings += probe.warnings
    plan = adapter.plan(AgentRequest(
        executable=executable, args=tuple(request.args), memory=memory,
        user_instructions=user,
        frozen_instructions=None if new else session.instructions,
        agent_session=session.agent_session, resume=not new,
        files_dir=str(_agent_files(home, session.id, target))))
    plan.warnings[:0] = warnings
    if new:
        session.channel = plan.channel
        session.instructions = plan.instructions
        session.suppression = plan.suppression
        session.warnings = list(plan.warnings)
        session.agent_session = plan.agent_session
        session.resumable = plan.not_resumable is None
        session.not_resumable_reason = plan.not_resumable
    return Prepared(session, plan, adapter, binding, new, base_env, target, grant,
                    _agent_files(home, session.id, target) if target else None, memory)


def dry_run_report(prepared: Prepared, home: Path) -> dict[str, Any]:
    """The launch plan as JSON: argv, environment changes, files, warnings, binding."""
    plan = prepared.plan
    files = []
    if prepared.new:
        files.append(str(state.session_dir(home, prepared.session.id) / "state.json"))
    if prepared.memory is not None:
        files += [prepared.memory.env["AMUX_MEMORY_CONFIG"],
                  os.path.join(prepared.memory.bin_dir, "amux")]
    files += list(plan.files)
    target = prepared.target
    return {
        "session": prepared.session.id, "resume": not prepared.new,
        "agent": prepared.session.agent, "adapter": prepared.adapter.name,
        "as_user": None if target is None else {
            "user": target.name, "uid": target.uid, "gid": target.gid,
            "groups": target.group_names(), "home": target.home},
        "argv": plan.argv, "env": _env_changes(prepared), "path_prepend": plan.path,
        "channel": plan.channel, "binding": prepared.session.binding,
        "principal": prepared.session.principal,
        "protocol_version": prepared.session.protocol_version,
        "instructions": plan.instructions, "suppression": plan.suppression,
        "agent_session": plan.agent_session, "files": files, "warnings": plan.warnings,
    }


def _env_changes(prepared: Prepared) -> dict[str, str | None]:
    """What the agent's environment changes from ours: set values, and None for removed."""
    env = {**prepared.base_env, **prepared.plan.env}
    changes: dict[str, str | None] = {k: v for k, v in env.items() if os.environ.get(k) != v}
    changes.update({k: None for k in os.environ if k not in env})
    changes.pop("PATH", None)  # shown as path_prepend
    return dict(sorted(changes.items()))


def launch(home: Path, request: RunRequest) -> int:
    """Run the agent to completion; its exit status (128+N when killed by signal N)."""
    from amux.launcher.supervise import AgentNotStarted, supervise

    client = wiring.installed_client()
    prepared = prepare(home, request, client)
    session, plan = prepared.session, prepared.plan
    if request.dry_run:
        print(json.dumps(dry_run_report(prepared, home), indent=2, ensure_ascii=False))
        return 0
    if prepared.new:
        state.save(home, session)
    for warning in plan.warnings:
        _warn(warning)
    target = prepared.target
    wired: wiring.Wired | None = None
    grant = prepared.grant
    run_dir: Path | None = None
    try:
        if plan.channel != "none" and prepared.binding is not None:
            if target is None:
                wired = _wire(home, prepared, client)
            else:
                grant, run_dir = _materialize(home, prepared, grant)
        if target is not None and prepared.agent_files is not None:
            _own_dir(prepared.agent_files, target)
        planfiles.write(plan.files, target)  # before every launch, from the (frozen) plan
        env = {**prepared.base_env, **plan.env}
        if plan.path:
            env["PATH"] = os.pathsep.join([*plan.path, prepared.base_env.get("PATH",
                                                                           os.defpath)])
        files = (prepared.adapter.session_files(env) if prepared.new and session.resumable
                 and session.agent_session is None else None)
        watch = agent_config.SessionWatch(files) if files is not None else None
        run_as = None if target is None else RunAs(target.uid, target.gid, target.groups)
        try:
            status = supervise(plan.argv, env, run_as=run_as,
                               on_start=None if watch is None else watch.start)
        except AgentNotStarted as problem:
            raise ClientError("invalid_argument", str(problem)) from None
        finally:
            if watch is not None:
                _learn_session(home, session, watch, plan.argv)
        print(closing_line(session, status), file=sys.stderr, flush=True)
        return status
    finally:
        unrevoked = wiring.unwire(wired) if wired is not None else None
        if grant is not None:
            unrevoked = wiring.revoke(grant)
            if unrevoked is None and run_dir is not None:
                remove(run_dir)  # else kept, so the next launch revokes the token
        if unrevoked:
            _warn(unrevoked)


def closing_line(session: state.SessionState, status: int) -> str:
    """What amux says when the agent ended: the amux session and how to resume it. The
    agent's own resume hint (`claude --resume <uuid>`) would bypass the frozen state."""
    ended = f"amux run: session {session.id} ended (exit {status})"
    if not session.resumable:
        return f"{ended}; it cannot be resumed: {session.not_resumable_reason}"
    if session.agent_session is None and session.adapter != "fallback":
        return f"{ended}; it cannot be resumed: {session.adapter}'s own session id is unknown"
    return f"{ended}; resume it with: amux run --resume {session.id}"


def _learn_session(home: Path, session: state.SessionState, watch: agent_config.SessionWatch,
                   argv: list[str]) -> None:
    """Record the agent's own session that its first run created, as the adapter picks it
    from what the watch saw; none, and a warning, when it cannot tell."""
    ref, warning = watch.finish(argv, os.getcwd())
    session.agent_session = ref
    if warning:
        _warn(warning)
        session.warnings.append(warning)
    if ref is not None or warning:
        state.save(home, session)


def _wire(home: Path, prepared: Prepared, client: Path) -> wiring.Wired | None:
    assert prepared.binding is not None
    try:
        wired = wiring.wire(home, prepared.session.id, prepared.binding, client)
    except wiring.NoMemory as reason:
        _warn(f"{reason}; memory calls of this session will fail")
        return None
    problem = wiring.check(wired) if not prepared.new else None
    if problem:
        _warn(problem)
    return wired


def _materialize(home: Path, prepared: Prepared, grant: wiring.Grant | None,
                 ) -> tuple[wiring.Grant | None, Path | None]:
    """An isolated run's token (a fresh one on resume) and its run directory."""
    target, session = prepared.target, prepared.session
    assert target is not None and session.binding is not None
    if grant is None:
        try:
            grant, problem = wiring.grant_for(home, target.name, session.binding)
        except wiring.NoMemory as reason:
            _warn(f"{reason}; memory calls of this session will fail")
            return None, None
        if problem:
            _warn(problem)
    made = materialize(session.id, target, grant.hub, grant.token, grant.binding,
                       grant.token_id, grant.principal, hub_uid=grant.connection.hub_uid)
    return grant, made.run_dir


def _own_dir(path: Path, target: Target) -> None:
    """Create `path` (and missing parents below the target's home) owned by the target."""
    missing = []
    for parent in [path, *path.parents]:
        if parent.exists() or str(parent) == target.home:
            break
        missing.append(parent)
    for directory in reversed(missing):
        directory.mkdir(mode=0o700)
        os.chown(directory, target.uid, target.gid)


def session_summary(session: state.SessionState) -> dict[str, Any]:
    data = asdict(session)
    for key in ("protocol", "instructions"):
        data.pop(key)
    return data
