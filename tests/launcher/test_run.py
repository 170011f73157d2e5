"""`amux run` end to end with a real Hub and small scripted agents named like the real ones.

The adapter is chosen by the command's name, so a script called `pi` or `claude`
gets that adapter's plan; it records what it was given and, for `pi`, uses memory
through the `amux` the launcher put on its PATH. The real agent CLIs are driven in
tests/e2e.
"""

from __future__ import annotations

import json
import os
import re
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from amux import __version__
from amux.adapters import ADAPTERS
from amux.protocol.render import version
from tests.agentlog import check_writes, find, listed, tree, wait_for_pid
from tests.hostile import fill, small_tmpfs
from tests.hubproc import HubProcess, amux
from tests.job import as_job
from tests.launcher.fakeagents import Launcher, enable, sessions_cli

PROTOCOL = f"amux memory protocol v{version()}"
"""How the protocol the launcher gives agents opens (its version changes)."""


@pytest.fixture
def launcher(hub: HubProcess, tmp_path: Path) -> Launcher:
    return Launcher(hub.home, tmp_path)


def live_tokens(hub: HubProcess) -> list[dict[str, Any]]:
    principals = hub.call("/v1/admin/principals", {"action": "list"})[1]["principals"]
    return [token for principal in principals for token in principal.get("tokens", [])]


def test_dry_run_prints_the_plan_and_starts_nothing(hub: HubProcess,
                                                    launcher: Launcher) -> None:
    enable(hub)
    done = launcher.run("--dry-run", "pi", "--", "-p", "hello")
    assert done.returncode == 0, done.stderr
    plan = json.loads(done.stdout)
    assert plan["channel"] == "cli" and plan["binding"] == "global"
    assert plan["argv"][0].endswith("/pi") and plan["argv"][-2:] == ["-p", "hello"]
    assert f"{PROTOCOL} (CLI)" in plan["instructions"]
    assert plan["env"] == {"AMUX_MEMORY_CONFIG": plan["run_dir"] + "/memory.json"}
    assert plan["env"]["AMUX_MEMORY_CONFIG"] in plan["files"]
    assert not launcher.log.exists() and launcher.sessions() == []
    assert not (hub.home / "run" / "agents").exists()


@pytest.mark.parametrize("agent", ["pi", "gemini", "claude"])
def test_a_dry_run_lists_exactly_what_the_launch_then_creates(
        hub: HubProcess, launcher: Launcher, tmp_path: Path, agent: str) -> None:
    """Both ways: every path the launch creates (in AMUX_HOME, the user's home, the cwd) is
    in the dry run's `writes`, and each of those is there, of its kind and mode, while the
    agent runs. Pi has plan files, Gemini mirrors too; Claude runs without memory (memory
    off). The launcher's caches (the agent's version, the hooks' answers) are not the
    launch's: a dry run neither reads nor writes them."""
    if agent != "claude":
        enable(hub)
    user, work = tmp_path / "user", tmp_path / "work"
    (user / ".gemini").mkdir(parents=True)
    (user / "notes.txt").write_text("the user's own\n")
    work.mkdir()
    roots = (hub.home, user, work)
    before = tree(listed(*roots), hub.home)
    done = launcher.run("--dry-run", agent, "--", "-p", "x", env={"HOME": str(user)},
                        cwd=work)
    assert done.returncode == 0, done.stderr
    dry = json.loads(done.stdout)
    assert tree(listed(*roots), hub.home) == before  # a dry run writes nothing
    done = launcher.run(agent, "--", "-p", "x", cwd=work, env={
        "HOME": str(user), "FAKE_AGENT_ACTION": "tree",
        "FAKE_AGENT_TREE": json.dumps(find(*roots))})
    assert done.returncode == 0, done.stderr
    [session] = launcher.sessions()
    check_writes(dry, session.name, before, tree(launcher.records()[0]["tree"], hub.home),
                 {"launcher": os.geteuid()})
    assert (dry["run_dir"] is not None) == (agent != "claude")


def test_a_launch_wires_memory_freezes_state_and_cleans_up(hub: HubProcess,
                                                           launcher: Launcher) -> None:
    enable(hub)
    tokens_before = len(live_tokens(hub))
    done = launcher.run("pi", "--", "-p", "remember this",
                        env={"FAKE_AGENT_ACTION": "upsert", "FAKE_AGENT_EXIT": "7"})
    assert done.returncode == 7, done.stderr  # the agent's exit status
    record = launcher.records()[0]
    assert record["upsert"]["code"] == 0, record["upsert"]
    assert json.loads(record["upsert"]["out"])["created"] is True
    assert record["which"].endswith("/bin/amux") and "/run/agents/" in record["which"]
    assert "AMUX_TOKEN" not in record["env"]  # the token is in a 0600 file, not the env
    got = hub.call("/v1/memory/get", {"path": "notes/agent.md"})[1]
    assert got["content"] == "written by the agent\n"
    [session] = launcher.sessions()
    state = json.loads((session / "state.json").read_text())
    assert stat.S_IMODE((session / "state.json").stat().st_mode) == 0o600
    assert state["binding"] == "global" and state["channel"] == "cli"
    assert state["protocol"].startswith(f"{PROTOCOL} (CLI)")
    assert state["instructions"] == state["protocol"]
    assert state["agent_session"] == str(session / "pi-session.jsonl")
    assert record["argv"][:2] == ["--session", state["agent_session"]]
    assert not any((hub.home / "run" / "agents").iterdir())  # run dir gone
    assert len(live_tokens(hub)) == tokens_before  # delegated token revoked


def test_hub_down_gives_a_warning_and_a_session_without_memory(short_home: Path,
                                                               tmp_path: Path) -> None:
    launcher = Launcher(short_home, tmp_path)  # no Hub ever ran on this home
    done = launcher.run("claude", "--", "-p", "hi", env={
        "AMUX_HUB": f"unix:{tmp_path}/no-hub.sock", "AMUX_TOKEN": "amux_" + "x" * 43})
    assert done.returncode == 0, done.stderr
    assert "warning" in done.stderr and "hub_unreachable" in done.stderr
    record = launcher.records()[0]
    assert record["argv"][2:] == ["-p", "hi"]  # only the session id added: no protocol, tools
    assert "CLAUDE_CODE_DISABLE_AUTO_MEMORY" not in record["env"]
    assert not (launcher.home / "memory").exists()  # no temporary store either


def test_memory_off_keeps_the_agents_own_policy(hub: HubProcess, launcher: Launcher) -> None:
    done = launcher.run("claude", "--", "-p", "hi", "--append-system-prompt", "mine")
    assert done.returncode == 0, done.stderr
    assert "memory.enabled = false" in done.stderr
    record = launcher.records()[0]
    assert record["argv"][2:] == ["-p", "hi", "--append-system-prompt", "mine"]
    assert "CLAUDE_CODE_DISABLE_AUTO_MEMORY" not in record["env"]


def test_resume_replays_the_frozen_state_even_with_memory_off(hub: HubProcess,
                                                              launcher: Launcher) -> None:
    enable(hub)
    assert launcher.run("claude", "--", "-p", "one", "--append-system-prompt",
                        "mine").returncode == 0
    [session] = launcher.sessions()
    enable(hub, False)
    done = launcher.run("--resume", session.name, "--", "-p", "two")
    assert done.returncode == 0, done.stderr
    assert "memory_disabled" in done.stderr  # says why memory calls will fail
    first, second = launcher.records()
    prompt = [a for a in first["argv"] if a.startswith("--append-system-prompt=")]
    assert prompt == [a for a in second["argv"] if a.startswith("--append-system-prompt=")]
    assert prompt[0].startswith(f"--append-system-prompt=mine\n\n{PROTOCOL}")
    assert second["env"]["CLAUDE_CODE_DISABLE_AUTO_MEMORY"] == "1"
    session_id = first["argv"][first["argv"].index("--session-id") + 1]
    assert second["argv"][:2] == ["--resume", session_id]
    assert second["argv"][-2:] == ["-p", "two"]


V1_PROTOCOL = (
    "amux memory protocol v1 (MCP). Long-term memory shared across sessions: the amux MCP "
    "tools (result_continue fetches the rest of a long result). Its paths are not local "
    "files.\n- In a new session read the small entry MEMORY.md once (memory_get); reuse it "
    "while in context.\n")
"""The opening of what version 1 taught (a session bound before version 2)."""


def test_a_session_bound_to_an_earlier_protocol_keeps_it_on_resume(
        hub: HubProcess, launcher: Launcher) -> None:
    enable(hub)
    assert launcher.run("claude", "--", "-p", "one").returncode == 0
    [session] = launcher.sessions()
    state_file = session / "state.json"
    frozen = json.loads(state_file.read_text())
    current = frozen["protocol"]
    frozen["protocol"], frozen["protocol_version"] = V1_PROTOCOL, "1"
    frozen["instructions"] = frozen["instructions"].replace(current, V1_PROTOCOL)
    state_file.write_text(json.dumps(frozen))
    done = launcher.run("--resume", session.name, "--", "-p", "two")
    assert done.returncode == 0, done.stderr
    second = launcher.records()[1]
    [prompt] = [a for a in second["argv"] if a.startswith("--append-system-prompt=")]
    assert prompt == "--append-system-prompt=" + frozen["instructions"]
    assert V1_PROTOCOL in prompt and PROTOCOL not in prompt


def test_a_hub_killed_during_the_session_is_said_with_what_to_do(
        hub: HubProcess, launcher: Launcher) -> None:
    """Issue 37: the agent's save fails with hub_unreachable naming the fix, and the launch
    ends saying what failed and what to do, not only "exit 0"."""
    enable(hub)
    done = launcher.run("pi", "--", "-p", "save this", env={  # pi: the client on PATH
        "FAKE_AGENT_ACTION": "kill-hub", "FAKE_KILL_PID": str(hub.process.pid),
        "FAKE_HUB_SOCKET": hub.socket_path})
    assert done.returncode == 0, done.stderr
    [record] = launcher.records()
    assert record["upsert"]["code"] == 4, record
    assert json.loads(record["upsert"]["out"])["error"]["code"] == "hub_unreachable"
    assert "nothing was read or written" in record["upsert"]["err"]
    assert "amux hub start" in record["upsert"]["err"]
    [session] = launcher.sessions()
    lines = done.stderr.strip().splitlines()
    assert lines[-2].startswith(f"amux run: session {session.name} ended (exit 0")
    assert lines[-1].startswith("amux run: the Hub stopped answering during this session: "
                                "the agent's memory calls after that failed")
    assert "amux hub start" in lines[-1] and "amux memory log --since " in lines[-1]
    assert lines[-1].endswith(f"amux run --resume {session.name}")


def test_a_hub_restarted_during_the_session_is_said() -> None:
    from amux.launcher.run import hub_line

    started = time.mktime((2026, 12, 5, 9, 30, 0, 0, 0, -1))
    line = hub_line("20261205-093000-abcdef", 100, 200, started)
    assert line == (
        "amux run: the Hub restarted during this session (pid 100, now 200): the agent's "
        "memory calls while it was down failed (hub_unreachable). `amux memory log --since "
        "2026-12-05T09:30` shows what this session saved; resume it to redo the rest: amux "
        "run --resume 20261205-093000-abcdef")


def test_a_session_without_binding_never_adopts_memory(hub: HubProcess,
                                                       launcher: Launcher) -> None:
    assert launcher.run("claude", "--", "-p", "one").returncode == 0
    [session] = launcher.sessions()
    enable(hub)
    done = launcher.run("--resume", session.name, "--", "-p", "two")
    assert done.returncode == 0, done.stderr
    second = launcher.records()[1]
    assert not any(a.startswith("--append-system-prompt") for a in second["argv"])
    assert "CLAUDE_CODE_DISABLE_AUTO_MEMORY" not in second["env"]


def test_the_agents_own_resume_flags_are_refused(hub: HubProcess, launcher: Launcher) -> None:
    enable(hub)
    done = launcher.run("claude", "--", "--resume", "abc")
    assert done.returncode == 2
    assert json.loads(done.stdout)["error"]["code"] == "invalid_argument"
    assert "amux run --resume" in done.stderr
    assert not launcher.log.exists()


def test_other_agents_run_unchanged_with_a_report(hub: HubProcess, launcher: Launcher) -> None:
    enable(hub)
    done = launcher.run("my-agent", "--", "--flag", env={"FAKE_AGENT_EXIT": "3"})
    assert done.returncode == 3
    assert "no memory capability for my-agent" in done.stderr
    assert launcher.records()[0]["argv"] == ["--flag"]


LAUNCH_NEVER_IMPORTS = {"typing", "uuid", "platform", "dataclasses", "inspect", "argparse"}
"""What a launch does without: each costs every launch a few ms before the agent starts
(`typing` ~5, `uuid` with `platform` ~5, `dataclasses` with `inspect` ~10, `argparse` ~12)."""


@pytest.mark.parametrize("agent", ["claude", "pi", "copilot"])
def test_a_launch_imports_nothing_it_can_do_without(hub: HubProcess, launcher: Launcher,
                                                    agent: str) -> None:
    """The launcher's own start is most of what `amux run` adds to an agent's: the imports
    on the way to the agent's start stay lean (docs/benchmarks.md)."""
    enable(hub)
    script = launcher.bin / agent
    if not script.exists():
        script.write_text((launcher.bin / "pi").read_text())
        script.chmod(0o755)
    done = launcher.run(agent, "--", "-p", "x", python_flags=("-X", "importtime"))
    assert done.returncode == 0, done.stderr
    imported = {line.rpartition("|")[2].strip() for line in done.stderr.splitlines()
                if line.startswith("import time:")}
    assert "amux.launcher.run" in imported
    assert not imported & LAUNCH_NEVER_IMPORTS


def test_sessions_list_and_show(hub: HubProcess, launcher: Launcher) -> None:
    enable(hub)
    assert launcher.run("pi", "--", "-p", "x").returncode == 0
    environment = {**os.environ, "AMUX_HOME": str(hub.home)}
    listed = json.loads(subprocess.run([sys.executable, "-m", "amux", "sessions", "list"],
                                       capture_output=True, text=True, env=environment,
                                       timeout=60).stdout)
    [entry] = listed["sessions"]
    assert entry["agent"] == "pi" and "protocol" not in entry
    shown = json.loads(subprocess.run([sys.executable, "-m", "amux", "sessions", "show",
                                       entry["id"]], capture_output=True, text=True,
                                      env=environment, timeout=60).stdout)
    assert shown["protocol"].startswith(f"{PROTOCOL} (CLI)")


def test_pi_gets_its_merged_text_as_a_file_rewritten_before_every_launch(
        hub: HubProcess, launcher: Launcher, tmp_path: Path) -> None:
    enable(hub)
    agent_dir = tmp_path / "pi-agent"
    agent_dir.mkdir()
    (agent_dir / "APPEND_SYSTEM.md").write_text("GLOBAL RULES\n")
    env = {"PI_CODING_AGENT_DIR": str(agent_dir)}
    assert launcher.run("pi", "--", "-p", "one", env=env).returncode == 0
    [session] = launcher.sessions()
    state = json.loads((session / "state.json").read_text())
    assert state["instructions"] == f"GLOBAL RULES\n\n\n{state['protocol']}"
    given = session / "pi-append-system.md"
    first = launcher.records()[0]["argv"]
    assert first[:4] == ["--session", state["agent_session"], "--append-system-prompt",
                         str(given)]
    assert not any("amux memory protocol" in arg for arg in first)  # not on the command line
    assert given.read_text() == state["instructions"]
    assert stat.S_IMODE(given.stat().st_mode) == 0o600
    given.write_text("tampered")  # and the user's rules change: the session keeps its own
    (agent_dir / "APPEND_SYSTEM.md").write_text("NEW RULES\n")
    done = launcher.run("--resume", session.name, "--", "-p", "two", env=env)
    assert done.returncode == 0, done.stderr
    assert launcher.records()[1]["argv"][:4] == first[:4]
    assert given.read_text() == state["instructions"]


def test_pi_no_session_is_ephemeral_listed_so_and_refused_on_resume(
        hub: HubProcess, launcher: Launcher) -> None:
    enable(hub)
    done = launcher.run("pi", "--", "--no-session", "-p", "x")
    assert done.returncode == 0, done.stderr
    argv = launcher.records()[0]["argv"]
    assert "--no-session" in argv and "--session" not in argv
    [entry] = sessions_cli(hub, "list")["sessions"]
    assert entry["resumable"] is False and entry["agent_session"] is None
    assert "--no-session" in entry["not_resumable_reason"]
    assert sessions_cli(hub, "show", entry["id"])["resumable"] is False
    refused = launcher.run("--resume", entry["id"], "--", "-p", "again")
    assert refused.returncode == 2
    message = json.loads(refused.stdout)["error"]["message"]
    assert f"session {entry['id']} cannot be resumed" in message
    assert "ephemeral" in message and "Pi kept nothing to resume" in message
    assert "start a new session" in message
    assert len(launcher.records()) == 1  # the agent never started


def test_stale_run_directories_are_revoked_and_removed(hub: HubProcess,
                                                       launcher: Launcher) -> None:
    enable(hub)
    issued = hub.call("/v1/admin/principals", {"action": "delegate", "name": owner(hub),
                                               "binding": "global"})[1]
    stale = hub.home / "run" / "agents" / "20260101-000000-dead00"
    stale.mkdir(parents=True)
    (stale / "launcher.pid").write_text("999999\n")
    (stale / "token.json").write_text(json.dumps({"principal": issued["principal"],
                                                  "token_id": issued["token_id"]}))
    assert launcher.run("pi", "--", "-p", "x").returncode == 0
    assert not stale.exists()
    assert issued["token_id"] not in {t.get("token_id") for t in live_tokens(hub)}


def owner(hub: HubProcess) -> str:
    principals = hub.call("/v1/admin/principals", {"action": "list"})[1]["principals"]
    return str(next(p["principal"] for p in principals if p["owner"]))


def launch_env(launcher: Launcher, **extra: str) -> dict[str, str]:
    environment = {k: v for k, v in os.environ.items()
                   if k not in ("AMUX_MEMORY_CONFIG", "AMUX_HUB", "AMUX_TOKEN")}
    environment.update({"AMUX_HOME": str(launcher.home), "FAKE_AGENT_LOG": str(launcher.log),
                        "PATH": f"{launcher.bin}{os.pathsep}{environment['PATH']}", **extra})
    return environment


def assert_cleaned_up(hub: HubProcess, tokens_before: int) -> None:
    assert not any((hub.home / "run" / "agents").iterdir())
    assert len(live_tokens(hub)) == tokens_before


def test_an_interactive_launch_owns_the_terminal(hub: HubProcess, launcher: Launcher) -> None:
    import pexpect

    enable(hub)
    tokens_before = len(live_tokens(hub))
    job = as_job(sys.executable, "-m", "amux", "run", "pi")
    child = pexpect.spawn(job[0], job[1:], timeout=60,
                          env=launch_env(launcher, FAKE_AGENT_ACTION="interactive"),
                          encoding="utf-8")
    child.expect("ready> ")
    child.sendline("hello agent")
    child.expect("got: hello agent")
    wait_for_pid(launcher.log)
    child.sendintr()  # Ctrl-C reaches the agent, which dies of it; amux reports 128+2
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 130
    assert_cleaned_up(hub, tokens_before)


@pytest.mark.parametrize("how", ["agent SIGKILL", "agent SIGTERM", "launcher SIGTERM",
                                 "launcher SIGINT"])
def test_cleanup_runs_however_the_agent_ends(hub: HubProcess, launcher: Launcher,
                                             how: str) -> None:
    enable(hub)
    tokens_before = len(live_tokens(hub))
    process = subprocess.Popen(as_job(sys.executable, "-m", "amux", "run", "pi"),
                               env=launch_env(launcher, FAKE_AGENT_ACTION="wait"),
                               stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    agent = wait_for_pid(launcher.log)
    target, signum = how.split()
    os.kill(agent if target == "agent" else process.pid, getattr(signal, signum))
    _, err = process.communicate(timeout=60)
    assert process.returncode == 128 + getattr(signal, signum)  # the agent's fate, passed on
    # Stopped within seconds on purpose: said as such, never "could not reach its model".
    assert err.strip().splitlines()[-1].startswith(f"amux run: pi was stopped by {signum}")
    assert "could not reach its model" not in err
    with pytest.raises(ProcessLookupError):
        os.kill(agent, 0)
    assert_cleaned_up(hub, tokens_before)


def test_amux_names_the_session_and_its_resume_command_when_the_agent_ends(
        hub: HubProcess, launcher: Launcher) -> None:
    """Claude prints `claude --resume <uuid>` on exit, which bypasses the frozen state;
    amux's own last line names the amux session and the command that keeps it."""
    enable(hub)
    done = launcher.run("claude", "--", "-p", "one")
    assert done.returncode == 0
    [session] = launcher.sessions()
    assert re.fullmatch(rf"amux run: session {session.name} ended \(exit 0 after \d+\.\d s\); "
                        rf"resume it with: amux run --resume {session.name}",
                        done.stderr.splitlines()[-1])
    dry = launcher.run("--dry-run", "claude", "--", "-p", "x")
    assert "ended (exit" not in dry.stderr + dry.stdout  # not in the dry-run's output


@pytest.mark.parametrize("agent", ["claude", "codex", "pi", "my-agent"])
def test_a_quick_failure_says_the_exit_status_the_likely_cause_and_the_fix(
        hub: HubProcess, launcher: Launcher, agent: str) -> None:
    """An agent that cannot reach its model (no login on a fresh machine) exits at once;
    the closing line says its status and, after the resume command, what to do for that
    agent, without claiming to know the cause."""
    enable(hub)
    headless = (("exec", "--skip-git-repo-check", "one") if agent == "codex"
                else ("-p", "one"))
    done = launcher.run(agent, "--", *headless, env={"FAKE_AGENT_EXIT": "3"})
    assert done.returncode == 3
    ended, hint = done.stderr.splitlines()[-2:]
    assert re.match(r"amux run: session \S+ ended \(exit 3 after \d+\.\d s\)", ended)
    adapter = ADAPTERS.get(agent)
    fix = adapter.quick_exit_hint if adapter else None
    assert hint == (f"amux run: {agent} failed within 5 s; see its "
                    f"own message above. If it could not reach its model: "
                    f"{fix or 'check its own set-up: login, API key, model endpoint'}")
    # A long session that failed later: no guess (the window, without waiting it out).
    from amux.adapters.fallback import FallbackAdapter
    from amux.launcher import run, state

    [session] = [state.load(launcher.home, path.name) for path in launcher.sessions()]
    said = run.closing_line(session, 3, adapter or FallbackAdapter(), run.QUICK_EXIT_SECONDS)
    assert "failed within" not in said and said.startswith(ended.partition(" (")[0])


def test_instructions_given_again_on_resume_are_ignored_with_one_warning(
        hub: HubProcess, launcher: Launcher) -> None:
    enable(hub)
    assert launcher.run("claude", "--", "-p", "one", "--append-system-prompt",
                        "mine").returncode == 0
    [session] = launcher.sessions()
    same = launcher.run("--resume", session.name, "--", "-p", "two",
                        "--append-system-prompt", "mine")
    assert same.returncode == 0 and "ignored" not in same.stderr  # nothing lost: no warning
    changed = launcher.run("--resume", session.name, "--", "-p", "three",
                           "--append-system-prompt", "theirs")
    assert changed.returncode == 0, changed.stderr
    warnings = [line for line in changed.stderr.splitlines() if "ignored" in line]
    assert warnings == [
        "amux run: warning: --append-system-prompt 'theirs' ignored: a resumed session keeps "
        "the instructions it started with (see `amux sessions show`); start a new session "
        "to change them"]
    first, _second, third = launcher.records()
    prompt = [a for a in first["argv"] if a.startswith("--append-system-prompt=")]
    assert prompt == [a for a in third["argv"] if a.startswith("--append-system-prompt=")]


def test_resume_last_is_the_newest_session_started_in_this_directory(
        hub: HubProcess, launcher: Launcher, tmp_path: Path) -> None:
    enable(hub)
    here, there = tmp_path / "here", tmp_path / "there"
    here.mkdir()
    there.mkdir()
    nowhere = launcher.run("--resume", "last", cwd=here)
    assert nowhere.returncode == 2 and f"no amux session was started in {here}" in nowhere.stderr
    for cwd in (here, here, there):
        assert launcher.run("claude", "--", "-p", "one", cwd=cwd).returncode == 0
    states = [json.loads((path / "state.json").read_text()) for path in launcher.sessions()]
    newest_here = max((st for st in states if st["cwd"] == str(here)),
                      key=lambda st: st["created_at"])["id"]
    resumed = launcher.run("--resume", "last", "--", "-p", "two", cwd=here)
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stderr.splitlines()[0].startswith(
        f"amux run: resuming session {newest_here} (claude, started ")  # it names its pick
    assert resumed.stderr.splitlines()[-1].endswith(f"amux run --resume {newest_here}")
    assert launcher.records()[-1]["argv"][:2] == ["--resume", launcher.records()[1]["argv"][1]]


def test_resume_last_of_an_agent_is_its_newest_resumable_session_here(
        hub: HubProcess, launcher: Launcher, tmp_path: Path) -> None:
    """`amux run --resume last codex`; a newer session of another agent, or one that
    cannot be resumed (Pi's `--no-session`), is passed over."""
    enable(hub)
    assert launcher.run("claude", "--", "-p", "one", cwd=tmp_path).returncode == 0
    [claude] = [path.name for path in launcher.sessions()]
    assert launcher.run("pi", "--", "-p", "two", cwd=tmp_path).returncode == 0
    assert launcher.run("pi", "--", "--no-session", "-p", "x", cwd=tmp_path).returncode == 0
    [pi] = [state["id"] for state in (json.loads((path / "state.json").read_text())
                                      for path in launcher.sessions())
            if state["adapter"] == "pi" and state["resumable"]]
    for agent, expected in (("claude", claude), ("pi", pi)):
        done = launcher.run("--dry-run", "--resume", "last", agent, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["session"] == expected
        assert f"resuming session {expected} ({agent}," in done.stderr
    none = launcher.run("--resume", "last", "codex", cwd=tmp_path)
    assert none.returncode == 2 and f"no amux session of codex was started in {tmp_path}" \
        in none.stderr
    named = launcher.run("--resume", claude, "pi", cwd=tmp_path)
    assert named.returncode == 2 and "leave AGENT out" in named.stderr


def test_resume_last_skips_and_names_a_session_it_cannot_read(
        hub: HubProcess, launcher: Launcher, tmp_path: Path) -> None:
    """A newer session whose state.json is `[1]` was an AttributeError (`internal`)."""
    enable(hub)
    assert launcher.run("claude", "--", "-p", "one", cwd=tmp_path).returncode == 0
    [good] = launcher.sessions()
    bad = good.with_name("29991231-235959-000000")
    bad.mkdir()
    (bad / "state.json").write_text("[1]")
    resumed = launcher.run("--dry-run", "--resume", "last", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["session"] == good.name
    assert resumed.stderr.splitlines()[0] == (
        f"amux run: warning: skipped session {bad.name}: {bad}/state.json is not a session state "
        f"amux can read (not a JSON object), so it cannot be resumed: start a new session "
        f"instead, and remove this one: rm -r {bad}")
    assert resumed.stderr.splitlines()[1].startswith(f"amux run: resuming session {good.name}")
    assert len(resumed.stderr.splitlines()) == 2


@pytest.mark.parametrize("agent", ["gemini", "opencode"])
def test_a_user_config_nested_too_deeply_is_invalid_argument_naming_it(
        hub: HubProcess, launcher: Launcher, tmp_path: Path, agent: str) -> None:
    """json recursed out of the launcher (`internal ... (a bug)`) on a deep config."""
    enable(hub)
    (launcher.bin / agent).write_text((launcher.bin / "pi").read_text())
    (launcher.bin / agent).chmod(0o755)
    home = tmp_path / "home"
    (home / ".gemini").mkdir(parents=True)
    (home / ".gemini" / "settings.json").write_text('{"a": ' + "[" * 100_000)
    done = launcher.run("--dry-run", agent, env={
        "HOME": str(home), "OPENCODE_CONFIG_CONTENT": '{"a":' * 5000})
    assert done.returncode == 2, done.stderr
    assert json.loads(done.stdout)["error"]["code"] == "invalid_argument"
    where = {"gemini": f"Gemini's {home}/.gemini/settings.json",
             "opencode": "OPENCODE_CONFIG_CONTENT"}[agent]
    assert done.stderr.startswith(f"amux run: invalid_argument: {where} is not valid "
                                  "JSON(C): nested too deeply")


@pytest.mark.timeout(150)
@pytest.mark.parametrize("planted", ["fifo", "huge", "dotdot"])
def test_a_plain_launch_refuses_what_it_cannot_read_or_place(
        hub: HubProcess, launcher: Launcher, tmp_path: Path, planted: str) -> None:
    """The launching user's own Gemini settings: a FIFO (which hung even a dry run), a
    400 MB sparse context file (read whole), a `..` context file name (the merged text
    was written outside the mirror): each is one line naming it, at once."""
    enable(hub)
    (launcher.bin / "gemini").write_text((launcher.bin / "pi").read_text())
    (launcher.bin / "gemini").chmod(0o755)
    home = tmp_path / "home"
    dot = home / ".gemini"
    dot.mkdir(parents=True)
    outside = tmp_path / "outside.md"
    outside.write_text("mine\n")
    if planted == "fifo":
        os.mkfifo(dot / "settings.json")
    elif planted == "huge":
        with open(dot / "GEMINI.md", "wb") as handle:
            handle.truncate(400 << 20)
    else:
        (dot / "settings.json").write_text(json.dumps(
            {"context": {"fileName": "../../outside.md"}}))
    expected = {"fifo": "settings.json is a FIFO, not a regular file",
                "huge": "GEMINI.md is larger than 4 MiB",
                "dotdot": "context.fileName '../../outside.md' is not a plain file name"}
    for options in (("--dry-run",), ()):
        done = launcher.run(*options, "gemini", "--", "-p", "x", env={"HOME": str(home)})
        assert done.returncode == 2, done.stderr
        assert expected[planted] in done.stderr
    assert outside.read_text() == "mine\n"
    assert not launcher.log.exists()  # the agent never started


@pytest.mark.timeout(90)
def test_an_endpoint_where_nothing_answers_is_refused_before_the_agent_starts(
        hub: HubProcess, launcher: Launcher) -> None:
    """Codex reconnected for 11 minutes against a model server that was down, and amux
    said only "ended (exit 1 after 664.7 s)": the launch, and the resume of a session
    started with that endpoint, ask its host first and refuse at once, naming the fix."""
    import http.server
    import socket
    import threading
    import time

    enable(hub)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    endpoint = ("--endpoint", url, "--model", "qwen3")
    started = time.monotonic()
    done = launcher.run(*endpoint, "codex", "--", "exec", "hi")
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(f"amux run: invalid_argument: --endpoint {url}: nothing "
                                  f"answers at http://127.0.0.1:{port} (")
    assert "`ollama serve`), or point --endpoint at one that runs" in done.stderr
    assert time.monotonic() - started < 20 and not launcher.log.exists()
    assert launcher.run("--dry-run", *endpoint, "codex", "--", "exec", "hi").returncode == 0

    class Messages(http.server.BaseHTTPRequestHandler):
        """An Anthropic Messages server's answer to the launch's empty request."""

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            body = b'{"type": "error", "error": {"type": "invalid_request_error"}}'
            self.send_response(400)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Messages)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    root = url.removesuffix("/v1")  # Claude's form
    try:  # an error, if it is the API's, means a model server is there
        assert launcher.run("--endpoint", root, "--model", "qwen3", "claude", "--", "-p",
                            "hi").returncode == 0
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
    [session] = [path.name for path in launcher.sessions()]
    done = launcher.run("--resume", session)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(f"amux run: invalid_argument: session {session}'s "
                                  f"--endpoint {root}: nothing answers")
    assert done.stderr.rstrip().endswith("then resume again")


def fake(launcher: Launcher, agent: str) -> None:
    """A scripted agent named `agent` beside the launcher's own."""
    if not (launcher.bin / agent).exists():
        (launcher.bin / agent).write_text((launcher.bin / "pi").read_text())
        (launcher.bin / agent).chmod(0o755)


@pytest.mark.timeout(90)
def test_a_web_server_that_is_no_model_server_is_refused_before_the_agent_starts(
        hub: HubProcess, launcher: Launcher, tmp_path: Path) -> None:
    """Pointed at `python -m http.server`, Claude hung for 180 s and Codex printed its HTML
    501 page: now the question each agent's API defines is asked first, and what answered
    is named in one line with what the agent needs."""
    import functools
    import http.server
    import threading

    enable(hub)
    site = tmp_path / "site"
    site.mkdir()
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    root = f"http://127.0.0.1:{server.server_address[1]}"
    said = {}
    try:
        for agent, args in (("claude", ("-p", "hi")), ("codex", ("exec", "hi")),
                            ("gemini", ("-p", "hi"))):
            started = time.monotonic()
            done = launcher.run("--endpoint", root, "--model", "m", agent, "--", *args)
            assert done.returncode == 2, done.stderr
            assert time.monotonic() - started < 20
            said[agent] = done.stderr.splitlines()
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
    assert not launcher.log.exists() and not launcher.sessions()  # nothing started
    web = f"(text/html;charset=utf-8, SimpleHTTP/0.6 Python/{sys.version.split()[0]}), not JSON"
    assert said["claude"] == [
        f"amux run: invalid_argument: --endpoint {root}: no model server answers there: POST "
        f"{root}/v1/messages answered HTTP 501 {web}; Claude Code needs an Anthropic Messages "
        "API at http://HOST:PORT (the server's root)"]
    assert said["codex"] == [  # the root given: the API's /v1 is what Codex takes
        f"amux run: invalid_argument: --endpoint {root} (Codex needs the API's /v1 in it, so it "
        f"gets {root}/v1): no model server answers there: GET {root}/v1/models answered HTTP "
        f"404 {web}; Codex needs an OpenAI-compatible API at http://HOST:PORT/v1"]
    assert said["gemini"] == [
        f"amux run: invalid_argument: --endpoint {root}: no model server answers there: GET "
        f"{root}/v1beta/models answered HTTP 404 {web}; Gemini CLI needs the Gemini API at "
        "http://HOST:PORT (the server's root)"]


@pytest.mark.parametrize(("agent", "args", "cause"), [
    ("claude", (), "Claude Code starts its interactive UI, and stdin is not a terminal here; "
     'run it in a terminal, or give it a prompt: `amux run claude -- -p "…"`'),
    ("codex", (), "Codex starts its interactive UI, and stdin is not a terminal here; run it "
     'in a terminal, or give it a prompt: `amux run codex -- exec "…"`'),
    ("codex", ("a prompt",), 'Codex starts its interactive UI, and stdin is not a terminal '
     'here; run it in a terminal, or give it a prompt: `amux run codex -- exec "…"`'),
    ("pi", (), "Pi starts its interactive UI"),
    ("gemini", ("--skip-trust",), "Gemini CLI starts its interactive UI, and stdin is not a "
     'terminal here; run it in a terminal, or give it a prompt: `amux run gemini -- -p "…"`'),
    ("qwen", (), "Qwen Code starts its interactive UI, and stdin is not a terminal here; run "
     'it in a terminal, or give it a prompt: `amux run qwen -- "…"`'),
    ("copilot", (), "Copilot CLI starts its interactive UI, and stdin is not a terminal here; "
     'run it in a terminal, or give it a prompt: `amux run copilot -- -p "…"`'),
    ("codex", ("exec", "hi"), "Codex runs `exec` only in a git repository or a folder "
     "trusted in its config, and {cwd} is neither; run it in a repository, trust the folder"),
])
def test_a_quick_failure_with_a_cause_the_launch_tells_names_that_cause(
        hub: HubProcess, launcher: Launcher, tmp_path: Path, agent: str,
        args: tuple[str, ...], cause: str) -> None:
    """The README's main command run from a script failed on Claude's "Input must be
    provided" and amux blamed the login; Codex's `exec` outside a repository failed on
    its trust check and amux blamed the model server. Now each names its own cause."""
    enable(hub)
    fake(launcher, agent)
    cwd = tmp_path / "not-a-repository"
    cwd.mkdir()
    done = launcher.run(agent, "--", *args, env={"FAKE_AGENT_EXIT": "1"}, cwd=cwd)
    assert done.returncode == 1
    hint = done.stderr.splitlines()[-1]
    assert hint.startswith(f"amux run: {agent} failed within 5 s: "
                           f"{cause.format(cwd=cwd)}"), hint
    if agent == "codex" and args == ("exec", "hi"):  # in a repository it is not the cause
        subprocess.run(["git", "init", "-q", str(cwd)], check=True)
        again = launcher.run(agent, "--", *args, env={"FAKE_AGENT_EXIT": "1"}, cwd=cwd)
        assert "see its own message above" in again.stderr.splitlines()[-1]


@pytest.mark.timeout(90)
def test_an_endpoint_that_stopped_answering_is_the_cause_said(
        hub: HubProcess, launcher: Launcher) -> None:
    """The server answered the check before the launch and is gone when the agent fails."""
    import http.server
    import threading

    enable(hub)

    class Once(http.server.BaseHTTPRequestHandler):
        """Answers the launch's checks (anything there; the Messages API's error), then
        stops."""

        def do_GET(self) -> None:
            self.send_response(404)
            self.end_headers()

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.send_response(400)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"{}")
            threading.Thread(target=server.shutdown).start()

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Once)
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    thread = threading.Thread(target=server.serve_forever)
    thread.start()
    try:
        done = launcher.run("--endpoint", url, "--model", "m", "claude", "--", "-p", "hi",
                            env={"FAKE_AGENT_EXIT": "1"})
    finally:
        thread.join(30)
        server.server_close()
    assert done.returncode == 1
    [session] = [path.name for path in launcher.sessions()]
    assert done.stderr.splitlines()[-1].startswith(
        "amux run: claude failed within 5 s: its endpoint stopped answering: nothing answers "
        f"at {url.removesuffix('/v1')} (")
    assert done.stderr.splitlines()[-1].endswith(
        f"; start the model server there, then resume: amux run --resume {session}")


@pytest.mark.parametrize("agent", ["claude", "gemini", "pi"])
def test_a_session_the_agent_never_kept_is_not_offered_for_resume(
        hub: HubProcess, launcher: Launcher, agent: str) -> None:
    """Every failed attempt was offered for resume and listed `resumable: yes`, though the
    agent kept nothing: now only a session whose own file exists is."""
    enable(hub)
    if not (launcher.bin / agent).exists():
        (launcher.bin / agent).write_text((launcher.bin / "pi").read_text())
        (launcher.bin / agent).chmod(0o755)
    failed = launcher.run(agent, "--", "-p", "x", env={"FAKE_AGENT_EXIT": "1"})
    kept = launcher.run(agent, "--", "-p", "x")
    assert (failed.returncode, kept.returncode) == (1, 0)
    ended = [line for line in failed.stderr.splitlines() if " ended (exit 1 " in line]
    assert ended and ended[0].endswith(f"it cannot be resumed: ended before {agent} kept a "
                                       "session of its own, so there is nothing to resume")
    listed = {entry["id"]: entry for entry in sessions_cli(hub, "list")["sessions"]}
    assert sorted(entry["resumable"] for entry in listed.values()) == [False, True]
    [gone] = [sid for sid, entry in listed.items() if not entry["resumable"]]
    refused = launcher.run("--resume", gone)
    assert refused.returncode == 2 and "nothing to resume" in refused.stderr
    assert "resume it with" in kept.stderr


@pytest.mark.parametrize("agent", ["gemini", "qwen"])
def test_a_start_that_had_no_prompt_is_told_however_long_it_took(
        hub: HubProcess, launcher: Launcher, agent: str) -> None:
    """Qwen and Gemini read a prompt from stdin, and fail when none comes; under load they
    took longer than the quick-exit window, and amux named nothing. An interactive start
    with stdin /dev/null had no prompt, however long the agent took."""
    enable(hub)
    fake(launcher, agent)
    done = launcher.run(agent, env={"FAKE_AGENT_EXIT": "1", "FAKE_AGENT_SECONDS": "5.5"})
    assert done.returncode == 1
    assert done.stderr.splitlines()[-1].startswith(f"amux run: {agent} failed: ")
    assert "stdin is not a terminal here" in done.stderr.splitlines()[-1]
    prompted = launcher.run(agent, "--", "-p", "hi",
                            env={"FAKE_AGENT_EXIT": "1", "FAKE_AGENT_SECONDS": "5.5"})
    assert "ended (exit 1 after" in prompted.stderr.splitlines()[-1]  # no cause: it had one


def test_pi_ending_at_once_with_no_prompt_is_said(hub: HubProcess, launcher: Launcher) -> None:
    """Pi with no terminal and no prompt exits 0 with no output, and amux said nothing."""
    enable(hub)
    done = launcher.run("pi", env={"FAKE_AGENT_IDLE": "1"})
    assert done.returncode == 0
    assert done.stderr.splitlines()[-1] == (
        "amux run: pi exited 0 without running a prompt: Pi starts its interactive UI, and "
        'stdin is not a terminal here; run it in a terminal, or give it a prompt: `amux run '
        'pi -- -p "…"`')
    ran = launcher.run("pi", "--", "-p", "hi", env={"FAKE_AGENT_IDLE": "1"})
    assert "without running a prompt" not in ran.stderr  # a prompt: not that cause


def test_opencode_with_no_terminal_is_refused_before_it_draws_into_the_pipe(
        hub: HubProcess, launcher: Launcher) -> None:
    """OpenCode's UI drew into the pipe and waited for good: refused at once, naming its
    `run` form; its `run` and a dry run are not."""
    enable(hub)
    fake(launcher, "opencode")
    started = time.monotonic()
    done = launcher.run("opencode")
    assert done.returncode == 2
    assert done.stderr == (
        "amux run: invalid_argument: OpenCode draws its interactive UI on the terminal, and "
        "stdin and stdout are not one here: it would draw into the pipe and wait for good; "
        'run it in a terminal, or give it a prompt: `amux run opencode -- run "…"`\n')
    assert time.monotonic() - started < 20
    assert not launcher.log.exists() and not launcher.sessions()  # nothing started
    assert launcher.run("opencode", "--", "--prompt", "hi").returncode == 2  # the UI too
    assert launcher.run("--dry-run", "opencode").returncode == 0
    assert launcher.run("opencode", "--", "run", "hi").returncode == 0


def test_codex_exec_in_a_folder_its_config_trusts_is_not_said_to_be_untrusted(
        hub: HubProcess, launcher: Launcher, tmp_path: Path) -> None:
    enable(hub)
    cwd = tmp_path / "trusted-folder"
    cwd.mkdir()
    codex_home = launcher.home.parent / "codex-home"  # the launcher's CODEX_HOME
    codex_home.mkdir(exist_ok=True)
    (codex_home / "config.toml").write_text(f'[projects."{cwd}"]\ntrust_level = "trusted"\n')
    done = launcher.run("codex", "--", "exec", "hi", env={"FAKE_AGENT_EXIT": "1"}, cwd=cwd)
    assert done.returncode == 1
    assert "see its own message above" in done.stderr.splitlines()[-1]


def test_a_full_disk_is_storage_unavailable_not_a_usage_error(hub: HubProcess,
                                                             launcher: Launcher) -> None:
    """Issue 34: the sessions' folder on a full disk. The launch says so by type (exit 8,
    `storage_unavailable` naming ENOSPC and the path), not as a usage error (exit 2) nor a
    bug's traceback (as before); no token is left behind."""
    enable(hub)
    before = len(live_tokens(hub))
    with small_tmpfs(hub.home / "sessions", size="1m", mode="0700") as sessions:
        fill(sessions)
        done = launcher.run("pi", "--", "-p", "hi")
    assert done.returncode == 8, done.stderr
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("amux run: storage_unavailable: ") and "ENOSPC" in line, line
    assert json.loads(done.stdout)["error"]["errno"] == "ENOSPC"
    assert not (hub.home / "log" / "cli-errors.log").exists()
    assert len(live_tokens(hub)) == before
    assert not launcher.log.exists()  # the agent never started


OLD_HUB = ("import sys, amux; amux.__version__ = '0.0.1'; "
           "from amux.hub.server import main; sys.exit(main(sys.argv[1:]))")
"""A Hub of an older amux: the same code reporting another version (as after an upgrade)."""


def test_a_hub_of_another_amux_version_is_said_with_how_to_restart_it(
        short_home: Path, tmp_path: Path) -> None:
    hub = subprocess.Popen([sys.executable, "-c", OLD_HUB, str(short_home)],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert hub.stdout is not None
        assert json.loads(hub.stdout.readline())["version"] == "0.0.1"
        launcher = Launcher(short_home, tmp_path)
        amux(short_home, "system", "config", "set", "memory.enabled", "true")
        done = launcher.run("claude", "--", "-p", "one")
        assert done.returncode == 0, done.stderr
        assert (f"amux run: warning: the Hub runs amux 0.0.1 and this is amux {__version__}"
                in done.stderr)
        assert "amux hub stop && amux hub start" in done.stderr
    finally:
        hub.terminate()
        hub.communicate(timeout=30)
