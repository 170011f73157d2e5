"""`amux memory import` of stores the real agents wrote (issue 39): the pinned CLIs against
the mock model, their auto memory on (started without amux), save notes with their own
file tools where their system prompts say; amux then imports them. Claude Code's main
turn writes, and Gemini CLI's (`--yolo`, its `write_file`); Qwen Code's managed extractor
(a second conversation after a turn without tools) writes a user and a project memory,
and Qwen rebuilds each `MEMORY.md` itself."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

from tests.agentstores import enable_kilo_memory, git_repo, snapshot
from tests.hubproc import HubProcess, amux
from tests.mockmodel import MockModel, Recorded, Text, ToolCall
from tests.mockmodel.agents import (
    QWEN_EXTRACTOR,
    claude_env,
    gemini_env,
    kilo_env,
    qwen_env,
    qwen_is_side,
    run_agent,
)
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


def _not_the_extractor(request: Recorded) -> bool:
    """Qwen's side requests but its memory extractor, which this test scripts."""
    return qwen_is_side(request) and QWEN_EXTRACTOR not in json.dumps(request.body)


def test_a_store_qwen_code_wrote_itself(memory_hub: HubProcess, tmp_path: Path) -> None:
    qwen = npm_bin("qwen")
    repo = git_repo(tmp_path / "work" / "shop", "https://github.com/acme/shop.git")
    home = tmp_path / "home"
    key = re.sub(r"[^a-zA-Z0-9]", "-", str(repo))
    user_note = home / ".qwen" / "memories" / "user" / "prefers-tabs.md"
    project_note = home / ".qwen" / "projects" / key / "memory" / "project" / "release.md"
    front = "---\nname: {}\ndescription: {}\ntype: {}\n---\n\n{}"
    extractor = [ToolCall("write_file", {"file_path": str(user_note), "content": front.format(
                     "prefers tabs", "user prefers tabs", "user", "I always prefer tabs.\n")}),
                 ToolCall("write_file", {"file_path": str(project_note), "content": front.format(
                     "release", "how shop releases", "project", "Tag, then push.\n")}),
                 Text("Done.")]
    with MockModel([Text("Noted.")], extractor, is_side=_not_the_extractor) as model:
        env = qwen_env(tmp_path, model)
        done = subprocess.run([str(qwen), "--approval-mode=auto-edit", "-p",
                               "Remember: I always prefer tabs; shop releases by tag."],
                              env=env, cwd=repo, stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr[-2000:]
    [_turn, asked, *_] = model.main()
    assert QWEN_EXTRACTOR in json.dumps(asked.body)
    assert str(project_note.parent.parent) in json.dumps(asked.body)  # where Qwen says
    assert user_note.is_file() and project_note.is_file()  # Qwen wrote them
    index = project_note.parent.parent / "MEMORY.md"  # and indexed them itself
    assert "(project/release.md)" in index.read_text()
    before = snapshot(home / ".qwen")
    code, report, err = amux(memory_hub.home, "memory", "import", "qwen", "--apply",
                             env={"HOME": str(home)})
    assert code == 0, err
    actions = {note["path"]: note["action"] for note in report["notes"]}
    assert actions["projects/github.com-acme-shop/project/release.md"] == "created"
    assert actions["user/prefers-tabs.md"] == "created"
    assert actions["projects/github.com-acme-shop/MEMORY.md"] == "created"
    assert set(actions.values()) == {"created"}
    assert [skip["source"] for skip in report["skipped"]] == [  # the user index: yours
        str(home / ".qwen" / "memories" / "MEMORY.md")]
    _, shown, _ = amux(memory_hub.home, "memory", "show", "user/prefers-tabs.md")
    assert shown["content"] == user_note.read_text()
    code, again, _ = amux(memory_hub.home, "memory", "import", "qwen", "--apply",
                          env={"HOME": str(home)})
    assert {note["action"] for note in again["notes"]} == {"same"}
    assert snapshot(home / ".qwen") == before


def test_a_store_gemini_cli_wrote_itself(memory_hub: HubProcess, tmp_path: Path) -> None:
    gemini = npm_bin("gemini")
    repo = git_repo(tmp_path / "work" / "shop", "git@github.com:acme/shop.git")
    with MockModel([Text("Hello.")]) as model:
        env = gemini_env(tmp_path, model)
        done = run_agent([gemini, "-p", "Hi."], env, repo)
        assert done.returncode == 0, done.stderr[-2000:]
    said = re.search(r"(/[^\s`'\"]*/\.gemini/tmp/[^/\s`'\"]+/memory)/",
                     model.main()[0].instructions)
    assert said, "Gemini CLI's prompt names no private project memory"
    memory = Path(said.group(1))
    assert (memory.parent / ".project_root").read_text().strip() == str(repo)  # docs/sync.md
    story = [ToolCall("write_file", {"file_path": str(memory / "build.md"),
                                     "content": "# Build\n\nRun `make all` before a push.\n"}),
             ToolCall("write_file", {"file_path": str(memory / "MEMORY.md"),
                                     "content": "- [Build](build.md): make all\n"}),
             Text("Saved.")]
    with MockModel(story) as model:
        env = gemini_env(tmp_path, model)
        done = run_agent([gemini, "--yolo", "-p", "Remember: run make all."], env, repo)
        assert done.returncode == 0, done.stderr[-2000:]
    assert (memory / "build.md").is_file()  # Gemini CLI wrote it
    before = snapshot(tmp_path / "home" / ".gemini")
    home = {"HOME": env["HOME"]}
    code, report, err = amux(memory_hub.home, "memory", "import", "gemini", "--apply", env=home)
    assert code == 0, err
    assert {note["path"]: note["action"] for note in report["notes"]} == {
        "projects/github.com-acme-shop/MEMORY.md": "created",
        "projects/github.com-acme-shop/build.md": "created"}
    _, shown, _ = amux(memory_hub.home, "memory", "show", "projects/github.com-acme-shop/build.md")
    assert shown["content"].endswith("---\n" + (memory / "build.md").read_text())
    code, again, _ = amux(memory_hub.home, "memory", "import", "gemini", "--apply", env=home)
    assert {note["action"] for note in again["notes"]} == {"same"}
    assert snapshot(tmp_path / "home" / ".gemini") == before


def test_a_store_kilo_wrote_itself(memory_hub: HubProcess, tmp_path: Path) -> None:
    """Kilo Memory as its user keeps it: `kilo serve`, `POST /memory/enable` for the project
    and a fact remembered (the real Kilo 7.7.7 writes the folder); amux imports the fact's
    file under the project's remote, skips Kilo's empty templates, and a second apply
    writes nothing."""
    repo = git_repo(tmp_path / "work" / "widgets", "git@github.com:acme/widgets.git")
    fact = "The build uses make; run `make test` before pushing."
    with MockModel([Text("unused")]) as model:
        env = kilo_env(tmp_path, model)
        kept = enable_kilo_memory(env, repo, fact)["root"]
    manifest = json.loads((kept / "manifest.json").read_text())
    assert manifest["canonical"] == str(repo)  # where Kilo records the project
    assert fact in (kept / "project.md").read_text()
    before = snapshot(kept)
    where = {"HOME": env["HOME"], "XDG_DATA_HOME": env["XDG_DATA_HOME"]}
    code, report, err = amux(memory_hub.home, "memory", "import", "kilo", "--apply", env=where)
    assert code == 0, err
    assert {note["path"]: note["action"] for note in report["notes"]} == {
        "projects/github.com-acme-widgets/kilo-project.md": "created"}
    assert {Path(skip["source"]).name for skip in report["skipped"]} == {
        "environment.md", "corrections.md"}  # Kilo's empty templates
    _, shown, _ = amux(memory_hub.home, "memory", "show",
                       "projects/github.com-acme-widgets/kilo-project.md")
    assert shown["content"].startswith("---\nname: kilo-project\n")
    assert "metadata:\n  type: project\n" in shown["content"] and fact in shown["content"]
    code, again, _ = amux(memory_hub.home, "memory", "import", "kilo", "--apply", env=where)
    assert {note["action"] for note in again["notes"]} == {"same"}
    assert snapshot(kept) == before  # the source untouched
