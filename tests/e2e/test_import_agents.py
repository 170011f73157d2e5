"""`amux memory import claude` of a store the real Claude Code wrote (issue 39): the pinned
CLI against the mock model, its auto memory on (started without amux), saves a note with
its own Write tool into the directory its system prompt names; amux then imports it."""

from __future__ import annotations

import re
from pathlib import Path

from tests.client.agentstores import git_repo, snapshot
from tests.hubproc import HubProcess, amux
from tests.mockmodel import MockModel, Text, ToolCall
from tests.mockmodel.agents import claude_env, run_agent
from tests.peers import npm_bin

NOTE = ("---\nname: prefers-pytest\ndescription: the user wants pytest, not unittest\n"
        "metadata:\n  type: feedback\n---\n\nUse pytest.\n**Why:** the team's CI.\n"
        "**How to apply:** every new test.\n")


def test_a_store_claude_code_wrote_itself(memory_hub: HubProcess, tmp_path: Path) -> None:
    claude = npm_bin("claude")
    repo = git_repo(tmp_path / "work" / "shop", "git@github.com:acme/shop.git")
    with MockModel([Text("Hello.")]) as model:
        env = claude_env(tmp_path, model)
        done = run_agent([claude, "-p", "Hi."], env, repo)
        assert done.returncode == 0, done.stderr[-2000:]
    said = re.search(r"persistent,? file-based memory(?: system)? at `([^`]+)`",
                     model.main()[0].instructions)
    assert said, "Claude Code's prompt names no memory directory"
    memory = Path(said.group(1))
    key = re.sub(r"[^a-zA-Z0-9]", "-", str(repo.resolve()))
    assert memory == tmp_path / "claude" / "projects" / key / "memory"  # docs/sync.md
    story = [ToolCall("Write", {"file_path": str(memory / "feedback_pytest.md"),
                                "content": NOTE}),
             ToolCall("Write", {"file_path": str(memory / "MEMORY.md"),
                                "content": "- [Use pytest](feedback_pytest.md) — not unittest\n"}),
             Text("Saved.")]
    with MockModel(story) as model:
        env = claude_env(tmp_path, model)
        done = run_agent([claude, "-p", "Remember: use pytest.", "--allowedTools", "Write"],
                         env, repo)
        assert done.returncode == 0, done.stderr[-2000:]
    written = (memory / "feedback_pytest.md").read_text()  # as Claude Code wrote it: its
    assert 'description: "the user wants pytest, not unittest"' in written  # Write quotes
    assert written.endswith("Use pytest.\n**Why:** the team's CI.\n"  # front matter values
                            "**How to apply:** every new test.\n")
    before = snapshot(tmp_path / "claude")
    where = {"HOME": env["HOME"], "CLAUDE_CONFIG_DIR": env["CLAUDE_CONFIG_DIR"]}
    code, report, err = amux(memory_hub.home, "memory", "import", "claude", "--apply",
                             env=where)
    assert code == 0, err
    assert {note["path"]: note["action"] for note in report["notes"]} == {
        "projects/github.com-acme-shop/MEMORY.md": "created",
        "projects/github.com-acme-shop/feedback_pytest.md": "created"}
    _, shown, _ = amux(memory_hub.home, "memory", "show",
                       "projects/github.com-acme-shop/feedback_pytest.md")
    assert shown["content"] == written  # kept byte for byte
    code, again, _ = amux(memory_hub.home, "memory", "import", "claude", "--apply", env=where)
    assert {note["action"] for note in again["notes"]} == {"same"}
    assert snapshot(tmp_path / "claude") == before
