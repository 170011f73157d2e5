"""The real Codex through `amux run`: the merged `developer_instructions` start from what
Codex itself would use (a trusted project's layer over the profile over config.toml), and
each amux session records its own Codex thread even when two run at once in one
directory, so a resume continues the right conversation. What the model receives is read
from the recorded requests (tests/mockmodel); Codex, the launcher and the Hub are real."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

from amux.protocol.render import render
from tests.hubproc import HubProcess, amux_in
from tests.mockmodel import MockModel, Recorded, Text, ToolCall
from tests.mockmodel.agents import codex_env
from tests.peers import npm_bin

USER_RULE = "USER RULE: from config.toml."
PROFILE_RULE = "PROFILE RULE: from work.config.toml."
PROJECT_RULE = "PROJECT RULE: from the trusted project's .codex/config.toml."
UNTRUSTED_RULE = "UNTRUSTED RULE: never loaded."
EXEC = ("exec", "--skip-git-repo-check")


def finished(process: subprocess.Popen[str]) -> str:
    """Its stderr, once it exited 0."""
    out, err = process.communicate(timeout=180)
    assert process.returncode == 0, f"{out[-3000:]}\n{err[-3000:]}"
    return err


def codex_run(hub: HubProcess, env: dict[str, str], cwd: Path, *args: str) -> str:
    return finished(amux_in(hub, env, cwd, "run", str(npm_bin("codex")), "--", *args))


def git_repo(path: Path, rule: str) -> Path:
    (path / ".codex").mkdir(parents=True)
    (path / ".codex" / "config.toml").write_text(f"developer_instructions = {json.dumps(rule)}\n")
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    return path.resolve()


def developer_instructions(request: Recorded) -> str:
    """The developer message amux set (the one carrying the protocol)."""
    [merged] = [part for part in request.instruction_parts if "amux memory protocol" in part]
    return merged


def test_codex_starts_from_its_effective_layers(memory_hub: HubProcess, tmp_path: Path) -> None:
    """A trusted project's developer_instructions outrank the profile's and config.toml's,
    as in Codex; before, amux merged config.toml's (or the profile's) and its `-c` then
    replaced the project's text, so the user's project instructions were lost."""
    trusted = git_repo(tmp_path / "trusted", PROJECT_RULE)
    untrusted = git_repo(tmp_path / "untrusted", UNTRUSTED_RULE)
    extra = (f"developer_instructions = {json.dumps(USER_RULE)}\n"
             f'[projects."{trusted}"]\ntrust_level = "trusted"\n')
    with MockModel([Text("Hi.")]) as model:
        env = codex_env(tmp_path, model, extra)
        (Path(env["CODEX_HOME"]) / "work.config.toml").write_text(
            f"developer_instructions = {json.dumps(PROFILE_RULE)}\n")
        started = time.monotonic()
        codex_run(memory_hub, env, trusted / "sub", *EXEC, "In the project.")
        one_launch = time.monotonic() - started
        codex_run(memory_hub, env, trusted / "sub", "--profile", "work", *EXEC, "Profile too.")
        codex_run(memory_hub, env, tmp_path / "elsewhere", "--profile", "work", *EXEC, "Hi.")
        codex_run(memory_hub, env, untrusted, *EXEC, "Untrusted.")
        codex_run(memory_hub, env, untrusted, *EXEC, "--trust", "Trusted now.")
    in_project, with_profile, elsewhere, in_untrusted, with_trust = (
        developer_instructions(model.conversation(n)[0]) for n in range(5))
    protocol = render("mcp")
    assert in_project == f"{PROJECT_RULE}\n\n{protocol}"
    assert with_profile == f"{PROJECT_RULE}\n\n{protocol}"  # profile < project, as in Codex
    assert elsewhere == f"{PROFILE_RULE}\n\n{protocol}"  # profile > config.toml
    assert in_untrusted == f"{USER_RULE}\n\n{protocol}"
    assert with_trust == f"{UNTRUSTED_RULE}\n\n{protocol}"  # `exec --trust` loads it
    assert one_launch < 30


def state_of(hub: HubProcess) -> list[dict[str, Any]]:
    """Every session's state, oldest first."""
    states = [json.loads((d / "state.json").read_text())
              for d in (hub.home / "sessions").iterdir()]
    return sorted(states, key=lambda s: float(s["created_at"]))


def thread_of(request: Recorded) -> str:
    return request.headers["thread-id"]


def test_concurrent_codex_sessions_each_record_their_own_thread(memory_hub: HubProcess,
                                                                tmp_path: Path) -> None:
    """Session A starts, then B in the same directory while A runs; A ends while B is
    still writing its rollout. Before, A recorded the newest new rollout by mtime (B's) and
    resuming A continued B's conversation."""
    busy = [ToolCall("memory_search", {"query": f"q{n}"}, "amux", delay=0.02)
            for n in range(120)]  # B keeps writing its rollout until well after A ended
    with MockModel([Text("A done.", delay=3.0)], [*busy, Text("B done.")],
                   [Text("Resumed.")]) as model:
        env = codex_env(tmp_path, model)
        work = tmp_path / "work"
        first = amux_in(memory_hub, env, work, "run", str(npm_bin("codex")), "--", *EXEC,
                     "Prompt A.")
        assert model.wait_for(lambda r: r.conversation == 0, 60) is not None
        second = amux_in(memory_hub, env, work, "run", str(npm_bin("codex")), "--", *EXEC,
                      "Prompt B.")
        assert model.wait_for(lambda r: r.conversation == 1, 60) is not None
        finished(first)
        assert second.poll() is None, "B was meant to outlive A"
        finished(second)
        a, b = state_of(memory_hub)
        thread_a = thread_of(model.conversation(0)[0])
        thread_b = thread_of(model.conversation(1)[0])
        assert thread_a != thread_b
        assert (a["agent_session"], b["agent_session"]) == (thread_a, thread_b)
        finished(amux_in(memory_hub, env, work, "run", "--resume", a["id"], "--", *EXEC,
                      "Again A."))
    [resumed] = model.conversation(2)
    assert thread_of(resumed) == thread_a
    history = json.dumps(resumed.body)
    assert "Prompt A." in history and "Prompt B." not in history
