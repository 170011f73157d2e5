"""The real Gemini CLI (0.61.0) launched through `amux run gemini` against the scripted model.

Gemini runs at its defaults in a fresh home: API-key auth and the mock's base URL (what a
user of a Gemini API key has), the work directory trusted, the user's own global
`GEMINI.md` and an MCP server of theirs in `~/.gemini/settings.json`. Everything is real
but the model: the CLI, the launcher with its mirror of Gemini's home, `amux memory mcp`
and the Hub. The story: (1) the protocol is in Gemini's system instruction after the
user's own global text, the memory tools are gemini_declared with their schemas beside the
user's server; (2) a fact is saved, recalled in a new session, corrected and forgotten;
(3) resuming the first session sends the same system instruction and its history; (4)
Gemini's own memory files cannot be written through its file tools; (5) nothing of the
user's config is changed and what Gemini keeps (its sessions) lands in the real home.
"""

from __future__ import annotations

import contextlib
import json
import os
import pty
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from amux.launcher.supervise import STOP_GRACE
from amux.protocol.render import render
from tests.e2e.story import (
    PROMPTS,
    USER_MCP,
    amux_run,
    bounded,
    check_store_story,
    gemini_declared,
    mcp_results,
    mcp_story,
    sessions,
)
from tests.hubproc import HubProcess
from tests.mockmodel import MockModel, Recorded, Text, ToolCall
from tests.mockmodel.agents import gemini_env, gemini_mcp_server
from tests.peers import npm_bin

USER_GLOBAL = "USER-GLOBAL-RULE: answer like a pirate."


def user_env(root: Path, model: MockModel) -> dict[str, str]:
    """A Gemini user: API-key auth at the mock, a global GEMINI.md, an MCP server of theirs."""
    env = gemini_env(root, model, {"mcpServers": {"mine": gemini_mcp_server(
        [sys.executable, str(USER_MCP)])}})
    (Path(env["HOME"]) / ".gemini" / "GEMINI.md").write_text(USER_GLOBAL)
    return env


def system(request: Recorded) -> str:
    return "\n".join(request.instruction_parts)


def snapshot(directory: Path) -> dict[str, bytes]:
    return {str(path.relative_to(directory)): path.read_bytes()
            for path in sorted(directory.iterdir()) if path.is_file()}


def gemini_run(hub: HubProcess, env: dict[str, str], work: Path, *args: str,
               ) -> subprocess.CompletedProcess[str]:
    return amux_run(hub, env, work, str(npm_bin("gemini")), "--", *args)


def test_gemini_story(memory_hub: HubProcess, tmp_path: Path) -> None:
    with MockModel(*mcp_story()) as model:
        env = user_env(tmp_path, model)
        config = Path(env["HOME"]) / ".gemini"
        before = snapshot(config)
        work = tmp_path / "work"
        first_run = gemini_run(memory_hub, env, work, "-p", PROMPTS[0])
        assert "not shell commands" in first_run.stderr  # the limit, said at launch
        assert "changed settings.json" not in first_run.stderr  # Gemini left it as given
        for prompt in PROMPTS[1:]:
            gemini_run(memory_hub, env, work, "-p", prompt)
        first_id = sessions(memory_hub)[0]["id"]
        amux_run(memory_hub, env, work, "--resume", first_id, "--", "-p", "Still there?")
    main = model.main()
    first = main[0]
    text = system(first)
    protocol = render("mcp")
    assert f"{USER_GLOBAL}\n\n{protocol}" in text  # (1) in the system instruction, once
    assert text.count(protocol) == 1 and text.count(USER_GLOBAL) == 1
    tools = gemini_declared(first)
    assert {f"mcp_amux_{name}" for name in ("memory_search", "memory_get", "memory_upsert",
                                            "memory_forget", "result_continue")} <= set(tools)
    assert {"path", "content"} <= set(tools["mcp_amux_memory_upsert"]["parametersJsonSchema"]
                                      ["properties"])
    assert "mcp_mine_user_ping" in tools  # the user's own server stays
    check_store_story(memory_hub, model, mcp_results(model))  # (2)
    resumed = next(r for r in main if r.conversation == 4)
    assert resumed.instruction_parts == first.instruction_parts  # (3) byte for byte
    assert PROMPTS[0] in json.dumps(resumed.body["contents"])
    state = sessions(memory_hub)[0]
    assert state["adapter"] == "gemini" and state["agent_session"]
    # (5) The user's config is as it was; what Gemini itself keeps (its installation id, its
    # project registry, its sessions under the id amux chose) is in the real home, moved
    # back from the mirror or written through its links; no mirror is left.
    after = snapshot(config)
    assert {name: after[name] for name in before} == before
    assert {name.split(".")[0] for name in set(after) - set(before)} == {"installation_id",
                                                                         "projects"}
    assert str(work) in json.loads(after["projects.json"])["projects"]
    chats = list((config / "tmp").glob("*/chats/session-*.jsonl"))
    ids = {json.loads(chat.read_text().splitlines()[0])["sessionId"] for chat in chats}
    assert len(ids) == 4 and state["agent_session"] in ids  # (a resume in another minute
    # may start a second file of the same session)
    assert not list(memory_hub.home.glob("sessions/*/gemini-home"))


CONTEXT_SPELLINGS = ("GEMINI.md", "./GEMINI.md", "{work}/GEMINI.md", "sub/../GEMINI.md",
                     "AGENTS.md", "../work/AGENTS.md")
"""How a model may name a context file (the project's GEMINI.md, and AGENTS.md, a name of
the user's `context.fileName`): bare, `./`, absolute, through `..`."""


def test_gemini_cannot_write_its_own_memory_files(memory_hub: HubProcess,
                                                  tmp_path: Path) -> None:
    """(4) With its file tools on and nothing to confirm (`--yolo`, a flag users pass), a
    write to a context file is denied by the launch's policy however the model spells the
    path; another file is written. The control, plain Gemini given the same calls, writes
    each spelling."""
    work = tmp_path / "work"
    (work / "sub").mkdir(parents=True)
    calls = [ToolCall("write_file", {"file_path": path.format(work=work),
                                     "content": f"- tabs {number}\n"})
             for number, path in enumerate(CONTEXT_SPELLINGS)]
    other = ToolCall("write_file", {"file_path": "notes.txt", "content": "ok\n"})
    with MockModel([*calls, other, Text("Done.")], [*calls, Text("Done.")]) as model:
        env = gemini_env(tmp_path, model, {"context": {"fileName": ["GEMINI.md", "AGENTS.md"]}})
        gemini_run(memory_hub, env, work, "--yolo", "-p", "Note it.")
        launched = model.tool_results("write_file")
        assert not (work / "GEMINI.md").exists() and not (work / "AGENTS.md").exists()
        control = subprocess.run([str(npm_bin("gemini")), "--yolo", "-p", "Note it."],
                                 cwd=work, env=env, stdin=subprocess.DEVNULL,
                                 capture_output=True, text=True, timeout=120)
        assert control.returncode == 0, control.stderr[-2000:]
    *denied, written = launched
    for path, result in zip(CONTEXT_SPELLINGS, denied, strict=True):
        assert "denied by policy" in result.text and "amux memory" in result.text, (path,
                                                                                     result)
    assert not written.is_error and (work / "notes.txt").read_text() == "ok\n"
    plain = model.tool_results("write_file")[len(launched):]
    assert [result.is_error for result in plain] == [False] * len(CONTEXT_SPELLINGS), plain
    assert (work / "GEMINI.md").read_text() == "- tabs 3\n"
    assert (work / "AGENTS.md").read_text() == "- tabs 5\n"


def test_gemini_with_memory_off_and_the_hub_down(memory_hub: HubProcess,
                                                 tmp_path: Path) -> None:
    with MockModel([Text("Hello.")], [Text("Hello.")]) as model:
        env = user_env(tmp_path, model)
        work = tmp_path / "work"
        memory_hub.call("/v1/admin/config", {"action": "set", "key": "memory.enabled",
                                             "value": "false"})
        off = gemini_run(memory_hub, env, work, "-p", "Hi.")
        assert "memory.enabled = false" in off.stderr
        down = amux_run(memory_hub, {**env, "AMUX_HUB": f"unix:{tmp_path}/no-hub.sock",
                                     "AMUX_TOKEN": "amux_" + "d" * 43}, work,
                        str(npm_bin("gemini")), "--", "-p", "Hi.")
        assert "hub_unreachable" in down.stderr
    for request in model.main():  # Gemini as it is: no protocol, no amux tools
        assert "amux memory protocol" not in system(request)
        assert not any(name.startswith("mcp_amux_") for name in gemini_declared(request))
        assert USER_GLOBAL in system(request)
    assert [state["adapter"] for state in sessions(memory_hub)] == ["gemini", "gemini"]


# -- auto-memory: only an interactive Gemini runs it -----------------------------------------


EXTRACTION = "You are an Auto Memory Extraction Agent"
"""The first words of the system instruction of Gemini's auto-memory requests."""


def seed_old_session(home: Path, work: Path) -> None:
    """A past session auto-memory would mine: 12 user messages, idle for 5 hours (Gemini
    0.61.0 takes sessions with ≥ 10 user messages idle for ≥ 3 hours)."""
    chats = home / ".gemini" / "tmp" / work.name / "chats"
    chats.mkdir(parents=True)
    (home / ".gemini" / "projects.json").write_text(
        json.dumps({"projects": {str(work): work.name}}))
    old = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(time.time() - 5 * 3600))
    lines: list[dict[str, Any]] = [{"sessionId": "11111111-2222-4333-8444-555555555555",
                                    "projectHash": "p", "startTime": old, "lastUpdated": old,
                                    "kind": "main"}]
    for index in range(12):
        lines += [{"id": f"u{index}", "timestamp": old, "type": "user",
                   "content": [{"text": f"We always deploy with `make ship`, step {index}."}]},
                  {"id": f"g{index}", "timestamp": old, "type": "gemini", "content": "ok"}]
    session = chats / "session-2026-12-01T10-00-11111111.jsonl"
    session.write_text("".join(json.dumps(line) + "\n" for line in [
        *lines, {"$set": {"lastUpdated": old}}]))
    os.utime(session, (time.time() - 5 * 3600,) * 2)


def interactive(argv: list[str], env: dict[str, str], cwd: Path, model: MockModel,
                seconds: float) -> list[Recorded]:
    """Gemini's interactive UI on a terminal for `seconds` after its first request (its
    prompt, `-i`), then killed; the requests the model got."""
    controller, terminal = pty.openpty()
    agent = subprocess.Popen(argv, stdin=terminal, stdout=terminal, stderr=terminal, cwd=cwd,
                             env={**env, "TERM": "xterm-256color"}, start_new_session=True)
    os.close(terminal)
    drain = threading.Thread(target=_drain, args=(controller,), daemon=True)
    drain.start()
    try:
        assert model.wait_for(lambda request: not request.side, 90) is not None
        time.sleep(seconds)  # the test: what the UI asks for in that time
    finally:
        os.killpg(agent.pid, signal.SIGKILL)
        agent.wait(10)
        os.close(controller)
    return list(model.requests)


def _drain(fd: int) -> None:
    with contextlib.suppress(OSError):
        while os.read(fd, 65536):
            pass


def test_auto_memory_runs_in_gemini_but_not_in_an_amux_launch(memory_hub: HubProcess,
                                                              tmp_path: Path) -> None:
    """The user turned Gemini's `experimental.autoMemory` on. Run as it is, interactive
    Gemini mines the old session at start (the positive control); launched by amux, whose
    mirror's settings turn it off, it does not, in the same window."""
    seen = {}
    for way in ("gemini itself", "amux run"):
        root = tmp_path / way.replace(" ", "-")
        with MockModel(*[[Text("ok")] for _ in range(8)]) as model:
            env = gemini_env(root, model, {"experimental": {"autoMemory": True}})
            work = root / "work"
            work.mkdir()
            seed_old_session(Path(env["HOME"]), work)
            argv = [str(npm_bin("gemini")), "-i", "Hi."]
            if way == "amux run":
                env = {**env, "AMUX_HOME": str(memory_hub.home)}
                argv = [sys.executable, "-m", "amux", "run", argv[0], "--", *argv[1:]]
            requests = interactive(argv, env, work, model, seconds=12)
        seen[way] = [r for r in requests if EXTRACTION in system(r)]
    assert seen["gemini itself"], "the control: Gemini's auto-memory did not run"
    assert seen["amux run"] == []
    assert "amux memory protocol" in system(model.main()[0])  # memory was on for amux


def test_a_launch_asked_to_stop_ends_interactive_gemini_and_cleans_up(
        memory_hub: HubProcess, tmp_path: Path) -> None:
    """`kill <amux pid>` while an interactive Gemini runs: Gemini ignores the SIGTERM amux
    forwards, so after the launcher's grace it is killed (status 128+9), and amux cleans up
    as after any end: the session's token revoked, the mirror and run directory gone."""
    def tokens() -> int:
        principals = memory_hub.call("/v1/admin/principals", {"action": "list"})[1]
        return sum(t["kind"] != "login" for p in principals["principals"] for t in p["tokens"])

    before = tokens()
    work = tmp_path / "work"
    work.mkdir()
    with MockModel([Text("ok")]) as model:
        env = {**gemini_env(tmp_path, model), "AMUX_HOME": str(memory_hub.home),
               "TERM": "xterm-256color"}
        controller, terminal = pty.openpty()
        launcher = subprocess.Popen(
            [sys.executable, "-m", "amux", "run", str(npm_bin("gemini")), "--", "-i", "Hi."],
            stdin=terminal, stdout=terminal, stderr=terminal, cwd=work, env=env,
            start_new_session=True)
        os.close(terminal)
        threading.Thread(target=_drain, args=(controller,), daemon=True).start()
        try:
            assert model.wait_for(lambda request: not request.side, 90) is not None
            assert tokens() == before + 1  # the session's own, live while Gemini runs
            asked = time.monotonic()
            launcher.send_signal(signal.SIGTERM)
            status = launcher.wait(timeout=STOP_GRACE + 20)
            took = time.monotonic() - asked
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(launcher.pid, signal.SIGKILL)
            launcher.wait(10)
            os.close(controller)
    assert status == 128 + signal.SIGKILL and STOP_GRACE - 0.2 <= took < STOP_GRACE + 10
    assert tokens() == before
    assert not list(memory_hub.home.glob("sessions/*/gemini-home"))
    assert not any((memory_hub.home / "run" / "agents").iterdir())


def test_an_untrusted_folder_is_said_as_gemini_says_it_not_blamed_on_the_model(
        memory_hub: HubProcess, tmp_path: Path) -> None:
    """Issue 37: headless Gemini in a folder it does not trust exits 55 at once; amux's
    closing line says what Gemini said and the fix that works, not "check the model"."""
    with MockModel([Text("Hello.")]) as model:
        env = {key: value for key, value in user_env(tmp_path, model).items()
               if key != "GEMINI_CLI_TRUST_WORKSPACE"}  # a user who never trusted it
        work = tmp_path / "work"
        work.mkdir()
        refused = bounded([sys.executable, "-m", "amux", "run", str(npm_bin("gemini")), "--",
                           "-p", "Hi."], {**env, "AMUX_HOME": str(memory_hub.home)}, work)
        assert refused.returncode == 55, refused.stderr
        lines = refused.stderr.strip().splitlines()
        assert lines[-1].startswith("amux run: gemini exited 55: Gemini CLI does not trust "
                                    "this folder"), lines[-3:]
        assert "--skip-trust" in lines[-1]
        assert "could not reach its model" not in refused.stderr
        # The fix it names works.
        done = gemini_run(memory_hub, env, work, "--skip-trust", "-p", "Hi.")
        assert done.returncode == 0
    assert len(model.main()) == 1  # the refused run never asked the model
