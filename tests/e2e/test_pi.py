"""The real Pi before MCP (0.73.1, fixtures/npm-old: the command-line route; Pi 1.x is in
tests/e2e/test_pi1.py) through `amux run`: what Pi itself would append is kept, before the protocol,
and `--no-session` is Pi's ephemeral mode, never resumable. What the model receives is read
from the recorded request's system message (tests/mockmodel); Pi, the launcher and the
Hub are real."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from amux.protocol.render import render
from tests.hubproc import HubProcess, amux_in
from tests.mockmodel import MockModel, Text
from tests.mockmodel.agents import pi_env
from tests.peers import npm_old_bin

PROJECT_RULE = "PROJECT RULE: answer in haiku."
GLOBAL_RULE = "GLOBAL RULE: answer in French."
FILE_RULE = "FILE RULE: from a file named by the flag."
LITERAL_RULE = "LITERAL RULE: given on the command line."
MODEL = ("--model", "mock/mock-model")


def amux(hub: HubProcess, env: dict[str, str], cwd: Path, *args: str,
         ) -> subprocess.CompletedProcess[str]:
    process = amux_in(hub, env, cwd, *args)
    out, err = process.communicate(timeout=180)
    return subprocess.CompletedProcess(process.args, process.returncode, out, err)


def pi_run(hub: HubProcess, env: dict[str, str], cwd: Path, *pi_args: str) -> None:
    done = amux(hub, env, cwd, "run", str(npm_old_bin("pi")), "--", "-p", *MODEL, *pi_args)
    assert done.returncode == 0, f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"


def listed(hub: HubProcess, env: dict[str, str], cwd: Path) -> list[dict[str, Any]]:
    done = amux(hub, env, cwd, "sessions", "list")
    assert done.returncode == 0, done.stderr
    return list(json.loads(done.stdout)["sessions"])


def test_pi_keeps_the_users_append_system_md_before_the_protocol(memory_hub: HubProcess,
                                                                 tmp_path: Path) -> None:
    with MockModel([Text("Project.")], [Text("Global.")]) as model:
        env = pi_env(tmp_path, model)
        (Path(env["PI_CODING_AGENT_DIR"]) / "APPEND_SYSTEM.md").write_text(GLOBAL_RULE)
        project = tmp_path / "project"
        (project / ".pi").mkdir(parents=True)
        (project / ".pi" / "APPEND_SYSTEM.md").write_text(PROJECT_RULE)
        pi_run(memory_hub, env, project, "Hi.")
        pi_run(memory_hub, env, tmp_path / "elsewhere", "Hi.")  # no project file there
    [in_project] = model.conversation(0)
    [elsewhere] = model.conversation(1)
    protocol = render("cli")
    # Pi reads the first of the project's and the user's file, never both.
    assert f"{PROJECT_RULE}\n\n{protocol}" in in_project.instructions
    assert GLOBAL_RULE not in in_project.instructions
    assert f"{GLOBAL_RULE}\n\n{protocol}" in elsewhere.instructions


def test_pi_append_system_prompt_naming_a_file_gives_its_text(memory_hub: HubProcess,
                                                              tmp_path: Path) -> None:
    with MockModel([Text("Hi.")]) as model:
        env = pi_env(tmp_path, model)
        work = tmp_path / "work"
        (work / ".pi").mkdir(parents=True)
        (work / ".pi" / "APPEND_SYSTEM.md").write_text(PROJECT_RULE)
        (work / "extra.md").write_text(FILE_RULE)
        pi_run(memory_hub, env, work, "--append-system-prompt", "extra.md",
               "--append-system-prompt", LITERAL_RULE, "Hi.")
    [request] = model.main()
    assert f"{FILE_RULE}\n\n{LITERAL_RULE}\n\n{render('cli')}" in request.instructions
    assert "extra.md" not in request.instructions
    assert PROJECT_RULE not in request.instructions  # as Pi does: a flag turns discovery off


def test_pi_no_session_runs_ephemeral_and_is_never_resumed(memory_hub: HubProcess,
                                                           tmp_path: Path) -> None:
    with MockModel([Text("Ephemeral.")]) as model:
        env = pi_env(tmp_path, model)
        work = tmp_path / "work"
        pi_run(memory_hub, env, work, "--no-session", "Hi.")
    [request] = model.main()
    assert render("cli") in request.instructions  # memory as in any other session
    [entry] = listed(memory_hub, env, work)
    assert entry["resumable"] is False and entry["agent_session"] is None
    assert "ephemeral" in entry["not_resumable_reason"]
    # Pi wrote no session file: neither where it keeps its own nor in the amux session.
    assert not (Path(env["PI_CODING_AGENT_DIR"]) / "sessions").exists()
    session_dir = memory_hub.home / "sessions" / entry["id"]
    assert sorted(os.listdir(session_dir)) == ["pi-append-system.md", "state.json"]
    refused = amux(memory_hub, env, work, "run", "--resume", entry["id"], "--", "-p", "Again.")
    assert refused.returncode == 2, refused.stderr
    assert "cannot be resumed" in refused.stderr and "Pi kept nothing to resume" in refused.stderr
    assert "start a new session" in refused.stderr
    assert len(model.requests) == 1  # Pi was not started again
