"""Codex's plan (its `-c` overrides), and which Codex thread a run created (`pick_thread`),
from what the launcher saw: the new rollouts, their first lines, and which of them the
launched process tree held open. Two
Codex runs in one directory at once must never swap ids; when it cannot tell, no id.
The real Codex runs concurrently in tests/e2e/test_codex.py."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import tomlkit
from hypothesis import given
from hypothesis import strategies as st

from amux.adapters import ADAPTERS
from amux.adapters.base import AgentRequest, FinishedRun, Memory, SessionFile
from amux.adapters.codex import pick_thread, toml_value

SESSIONS = "/c/sessions/2026/12/01"
CWD = "/work/project"
T0 = 1_796_120_000.0  # the launch, seconds since the epoch
MEMORY = Memory(protocol="PROTOCOL", mcp_command=("/opt/amux", "memory", "mcp"),
                env={"AMUX_MEMORY_CONFIG": "/run/s/memory.json"}, bin_dir="/run/s/bin")
AMUX_ARGV = ("/usr/bin/codex", "-c", 'developer_instructions="…"', "-c",
             "features.memories=false")


def rollout(thread: str, *, held: bool = False, cwd: str = CWD, at: float = T0 + 0.5,
            originator: str = "codex_exec", source: object = "exec",
            thread_source: str | None = "user") -> SessionFile:
    stamp = datetime.fromtimestamp(at, UTC).isoformat(timespec="milliseconds")
    meta = {"type": "session_meta", "payload": {
        "id": thread, "session_id": thread, "cwd": cwd, "timestamp": stamp.replace("+00:00", "Z"),
        "originator": originator, "source": source, "thread_source": thread_source,
        "cli_version": "0.171.0"}}
    return SessionFile(f"{SESSIONS}/rollout-2026-12-01T10-00-00-{thread}.jsonl",
                       json.dumps(meta) + "\n", held)


def run(*files: SessionFile, args: tuple[str, ...] = ("exec", "hi"), watched: bool = True,
        argv0: tuple[str, ...] = AMUX_ARGV) -> tuple[str | None, str | None]:
    return pick_thread(FinishedRun((*argv0, *args), CWD, T0, T0 + 5, watched, files))


def test_the_thread_its_own_processes_held_wins_over_a_newer_one() -> None:
    """Before, the newest new rollout by mtime was taken: another session's, started
    alongside in the same directory."""
    assert run(rollout("mine", held=True), rollout("theirs", at=T0 + 2)) == ("mine", None)


def test_a_run_that_held_no_rollout_records_none_however_few_candidates() -> None:
    """The other session's rollout fits cwd, time and originator, but an embedded Codex
    would have held its own: no guess."""
    thread, warning = run(rollout("theirs"))
    assert thread is None and warning is not None and "cannot be resumed" in warning


def test_sub_agents_and_other_sources_are_not_the_sessions_thread() -> None:
    sub_agent = rollout("sub", held=True, at=T0 + 3,
                        source={"subagent": {"thread_spawn": {"parent_thread_id": "mine"}}})
    assert run(rollout("mine", held=True), sub_agent) == ("mine", None)
    tagged = rollout("tagged", held=True, thread_source="nightly")
    assert run(tagged)[0] is None
    assert run(tagged, args=("exec", "--thread-source", "nightly", "hi")) == ("tagged", None)


def test_of_several_threads_started_in_one_session_the_last() -> None:
    """`/new` in the TUI starts a second thread; resuming continues the latest."""
    first = rollout("first", held=True, originator="codex-tui", source="cli")
    second = rollout("second", held=True, at=T0 + 60, originator="codex-tui", source="cli")
    assert run(first, second, args=()) == ("second", None)


def test_unwatched_runs_fall_back_to_the_one_new_rollout_of_this_cwd_and_time() -> None:
    others = [rollout("elsewhere", cwd="/other"), rollout("earlier", at=T0 - 30),
              rollout("tui", originator="codex-tui", source="cli")]
    assert run(rollout("mine"), *others, watched=False) == ("mine", None)
    thread, warning = run(rollout("a"), rollout("b"), watched=False)
    assert thread is None and warning is not None and "2 new Codex threads" in warning


def test_an_interactive_codex_without_overrides_may_host_its_thread_elsewhere() -> None:
    """Without `-c`, Codex's TUI may run the thread in its shared background server, out
    of the launched process tree: then the one new rollout of this cwd and time."""
    tui = rollout("tui", originator="codex-tui", source="vscode")
    assert run(tui, args=(), argv0=("/usr/bin/codex",)) == ("tui", None)
    assert run(tui, args=())[0] is None  # with amux's -c, Codex runs it embedded


def test_no_rollout_no_id_and_a_warning() -> None:
    thread, warning = run(args=("exec", "--ephemeral", "hi"))
    assert thread is None and warning is not None and "--ephemeral" in warning
    broken = SessionFile(f"{SESSIONS}/rollout-x-id.jsonl", "{not json", True)
    named_otherwise = rollout("other-id", held=True)
    named_otherwise = SessionFile(f"{SESSIONS}/rollout-x-id.jsonl", named_otherwise.first_line,
                                  True)
    assert run(broken, named_otherwise)[0] is None


def test_the_adapter_names_where_its_rollouts_are() -> None:
    files = ADAPTERS["codex"].session_files({"CODEX_HOME": "/c"}, "/s")
    assert files is not None
    assert (files.directory, files.pattern) == ("/c/sessions", "rollout-*.jsonl")
    assert files.pick is pick_thread
    assert ADAPTERS["claude"].session_files({}, "/s") is None  # it chooses its id up front


def test_exec_ephemeral_is_never_resumable() -> None:
    for memory in (None, MEMORY):
        plan = ADAPTERS["codex"].plan(AgentRequest(
            executable="/usr/bin/codex", args=("exec", "--ephemeral", "hi"), memory=memory))
        assert plan.not_resumable is not None and "--ephemeral" in plan.not_resumable
        assert plan.argv[-3:] == ("exec", "--ephemeral", "hi")
    plan = ADAPTERS["codex"].plan(AgentRequest(
        executable="/usr/bin/codex", args=("exec", "hi"), memory=MEMORY))
    assert plan.not_resumable is None


def test_overrides_go_before_the_subcommand_with_instructions_as_toml() -> None:
    plan = ADAPTERS["codex"].plan(AgentRequest(
        executable="/usr/bin/codex", args=("exec", "hello"), memory=MEMORY,
        user_instructions=('Say "hi".',)))
    assert plan.argv[-2:] == ("exec", "hello") and plan.argv.count("exec") == 1
    value = next(a.partition("=")[2] for a in plan.argv
                 if a.startswith("developer_instructions="))
    assert tomlkit.parse(f"v = {value}")["v"] == plan.instructions
    assert plan.argv[plan.argv.index(f"developer_instructions={value}") - 1] == "-c"
    assert 'mcp_servers.amux.default_tools_approval_mode="approve"' in plan.argv
    for setting in plan.suppression["argv"]:
        assert plan.argv[plan.argv.index(setting) - 1] == "-c"


@given(st.text(), st.lists(st.text(), max_size=4),
       st.dictionaries(st.text(min_size=1), st.text(), max_size=4))
def test_toml_values_read_back_as_given(text: str, items: list[str],
                                        table: dict[str, str]) -> None:
    """What `-c key=VALUE` gets is the value itself once Codex's TOML parser reads it."""
    for value in (text, items, table):
        assert tomlkit.parse(f"v = {toml_value(value)}")["v"].unwrap() == value
