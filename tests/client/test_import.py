"""`amux memory import` and `export --dir` on the user's path: the real CLI, a real Hub,
stores laid out as each agent writes them (tests/agentstores.py)."""

from __future__ import annotations

import itertools
import os
import stat
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.agentstores import (
    claude_store,
    cline_bank,
    codex_store,
    gemini_store,
    git_repo,
    qwen_store,
    snapshot,
    topic,
)
from tests.hubproc import HubProcess, amux

CASES = itertools.count()
SECRET = "deploy with AKIAIOSFODNN7EXAMPLF\n"


def _import(hub: HubProcess, *args: str) -> tuple[int, Any]:
    code, out, err = amux(hub.home, "memory", "import", *args)
    assert code == 0, (out, err)
    return code, out


def _actions(report: dict[str, Any]) -> dict[str, str]:
    return {note["path"]: note["action"] for note in report["notes"]}


def _documents(hub: HubProcess) -> dict[str, str]:
    code, listed, _ = amux(hub.home, "memory", "list", "--limit", "1000")
    assert code == 0
    return {document["path"]: document["revision"] for document in listed["documents"]}


def test_claude_store_dry_run_apply_twice_refuses_secrets_leaves_source(
        memory_hub: HubProcess, tmp_path: Path) -> None:
    home = Path(os.environ["HOME"])
    repo = git_repo(tmp_path / "work" / "shop_app", "git@github.com:acme/shop.git")
    memory = claude_store(home, repo, {
        "feedback_pytest": topic("feedback_pytest", "use pytest, not unittest", "feedback",
                                 "Use pytest.\n**Why:** the team's CI.\n"
                                 "**How to apply:** new tests.\n"),
        "project_deadline": topic("project_deadline", "release freeze", "project",
                                  "Freeze starts 2026-12-20.\n"),
        "reference_aws": topic("reference_aws", "the deploy key", "reference", SECRET),
    })
    before = snapshot(home / ".claude")
    prefix = "projects/github.com-acme-shop/"

    _, dry = _import(memory_hub, "claude")
    assert dry["applied"] is False and _documents(memory_hub) == {}
    assert dry["projects"] == [{"source": memory.parent.name, "path": str(repo.resolve()),
                                "id": "github.com-acme-shop",
                                "why": "the repository's remote git@github.com:acme/shop.git"}]
    assert _actions(dry) == {f"{prefix}MEMORY.md": "create",
                             f"{prefix}feedback_pytest.md": "create",
                             f"{prefix}project_deadline.md": "create",
                             f"{prefix}reference_aws.md": "refused"}
    refused = next(note for note in dry["notes"] if note["action"] == "refused")
    assert refused["error"]["code"] == "secret_detected"
    assert "AKIAIOSFODNN7EXAMPLF" not in str(refused)  # never the secret

    _, applied = _import(memory_hub, "claude", "--apply")
    assert applied["summary"] == {"created": 3, "refused": 1, "skipped": 0}
    documents = _documents(memory_hub)
    assert sorted(documents) == [f"{prefix}MEMORY.md", f"{prefix}feedback_pytest.md",
                                 f"{prefix}project_deadline.md"]
    _, shown, _ = amux(memory_hub.home, "memory", "show", f"{prefix}feedback_pytest.md")
    assert shown["content"] == (memory / "feedback_pytest.md").read_text()  # kept as it is
    _, log, _ = amux(memory_hub.home, "memory", "log", f"{prefix}feedback_pytest.md")
    assert log["changes"][0]["source"] == f"import claude {memory}/feedback_pytest.md"

    _, again = _import(memory_hub, "claude", "--apply")
    assert again["summary"] == {"same": 3, "refused": 1, "skipped": 0}
    assert _documents(memory_hub) == documents
    _code, log_after, _ = amux(memory_hub.home, "memory", "log")
    assert len(log_after["changes"]) == 3  # the second run wrote nothing
    assert snapshot(home / ".claude") == before  # the source is never changed


def test_differs_is_left_unless_overwrite(memory_hub: HubProcess, tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "a.md").write_text("from the folder\n")
    amux(memory_hub.home, "memory", "upsert", "a.md", "--expected-revision", "absent",
         stdin="already in amux\n")
    amux(memory_hub.home, "memory", "upsert", "copy.md", "--expected-revision", "absent",
         stdin="same bytes\n")
    (folder / "b.md").write_text("same bytes\n")
    _, dry = _import(memory_hub, str(folder))
    assert _actions(dry) == {"a.md": "differs", "b.md": "duplicate"}
    assert dry["notes"][1]["duplicate_of"] == "copy.md"
    _, kept = _import(memory_hub, str(folder), "--apply")
    assert kept["summary"] == {"differs": 1, "duplicate": 1, "skipped": 0}
    _, replaced = _import(memory_hub, str(folder), "--apply", "--overwrite")
    assert _actions(replaced) == {"a.md": "replaced", "b.md": "duplicate"}
    _code, shown, _ = amux(memory_hub.home, "memory", "show", "a.md")
    assert shown["content"] == "from the folder\n"


def test_qwen_store_from_its_own_code(memory_hub: HubProcess, tmp_path: Path) -> None:
    home = Path(os.environ["HOME"])
    repo = git_repo(tmp_path / "scratch", None)  # no remote: the dry run says so
    project, user = qwen_store(
        home, repo,
        {"project/release.md": topic("release", "release steps", "project", "Tag, then push.\n",
                                     nested=False)},
        {"user/prefers-tabs.md": topic("prefers tabs", "user prefers tabs", "user",
                                       "I always prefer tabs.\n", nested=False)})
    before = snapshot(home / ".qwen")
    _, dry = _import(memory_hub, "qwen")
    key = project.parent.name
    assert dry["projects"][0]["source"] == key and dry["projects"][0]["path"] == str(repo)
    assert "has no git remote" in dry["projects"][0]["why"]
    assert f"--project-id={key}=ID" in dry["projects"][0]["why"]
    _, applied = _import(memory_hub, "qwen", "--apply",
                         f"--project-id={key}=example.com-me-scratch")
    assert _actions(applied) == {
        "projects/example.com-me-scratch/MEMORY.md": "created",
        "projects/example.com-me-scratch/project/release.md": "created",
        "user/prefers-tabs.md": "created"}
    assert [skip["source"] for skip in applied["skipped"]] == [str(user / "MEMORY.md")]
    assert snapshot(home / ".qwen") == before


def test_gemini_store_and_its_added_memories(memory_hub: HubProcess, tmp_path: Path) -> None:
    home = Path(os.environ["HOME"])
    repo = git_repo(tmp_path / "shop", "https://github.com/acme/shop.git")
    memory = gemini_store(home, repo, {"MEMORY.md": "- [Build](build.md) — make\n",
                                       "build.md": "# Build\n\nRun `make all`.\n"},
                          ["My favourite colour is teal.", "I live in Lisbon."])
    _, applied = _import(memory_hub, "gemini", "--apply")
    prefix = "projects/github.com-acme-shop/"
    assert _actions(applied) == {f"{prefix}MEMORY.md": "created",
                                 f"{prefix}build.md": "created",
                                 "user/gemini-added-memories.md": "created"}
    assert applied["projects"][0]["path"] == str(repo)
    assert [skip["source"] for skip in applied["skipped"]] == [str(memory / ".inbox")]
    _, build, _ = amux(memory_hub.home, "memory", "show", f"{prefix}build.md")
    assert build["content"].startswith(
        '---\nname: build\ndescription: "Build"\nmetadata:\n  type: project\n  updated: ')
    assert build["content"].endswith("---\n# Build\n\nRun `make all`.\n")
    _code, added, _ = amux(memory_hub.home, "memory", "show", "user/gemini-added-memories.md")
    assert added["content"].endswith(
        "---\n- My favourite colour is teal.\n- I live in Lisbon.\n")
    assert "Be brief" not in added["content"]  # only the section the tool wrote
    _, again = _import(memory_hub, "gemini", "--apply")
    assert set(_actions(again).values()) == {"same"}


def test_codex_and_cline(memory_hub: HubProcess, tmp_path: Path) -> None:
    home = Path(os.environ["HOME"])
    memories = codex_store(home)
    _, codex = _import(memory_hub, "codex", "--apply")
    assert _actions(codex) == {"imported/codex/MEMORY.md": "created",
                               "imported/codex/memory_summary.md": "created"}
    assert sorted(skip["source"] for skip in codex["skipped"]) == [
        str(memories / "raw_memories.md"),
        str(memories / "rollout_summaries" / "2026-12-01-cart.md")]
    repo = git_repo(tmp_path / "shop", "ssh://git@git.example.com:2222/team/shop.git")
    cline_bank(repo)
    code, out, _err = amux(memory_hub.home, "memory", "import", "cline")
    assert code == 2 and "--path REPO" in out["error"]["message"]
    _, cline = _import(memory_hub, "cline", "--path", str(repo), "--apply")
    assert sorted(_actions(cline)) == [
        f"projects/git.example.com-2222-team-shop/memory-bank/{name}"
        for name in ("activeContext.md", "progress.md", "projectbrief.md")]


def test_export_then_import_writes_nothing(memory_hub: HubProcess, tmp_path: Path) -> None:
    for path, text in (("MEMORY.md", "- [Tabs](user/tabs.md) — tabs\n"),
                       ("user/tabs.md", topic("tabs", "tabs", "user", "Tabs.\n")),
                       ("projects/github.com-a-b/x.md", "no front matter, 中文\n")):
        amux(memory_hub.home, "memory", "upsert", path, "--expected-revision", "absent",
             stdin=text)
    documents = _documents(memory_hub)
    out_dir = tmp_path / "export"
    code, exported, _ = amux(memory_hub.home, "memory", "export", "--dir", str(out_dir))
    assert code == 0 and exported["documents"] == 3
    assert (out_dir / "projects" / "github.com-a-b" / "x.md").read_text() == \
        "no front matter, 中文\n"
    assert stat.S_IMODE((out_dir / "user" / "tabs.md").stat().st_mode) == 0o600
    _, back = _import(memory_hub, str(out_dir), "--apply")
    assert set(_actions(back).values()) == {"same"} and _documents(memory_hub) == documents
    code, again, _ = amux(memory_hub.home, "memory", "export", "--dir", str(out_dir))
    assert code == 2 and "not an empty folder" in again["error"]["message"]
    code, part, _ = amux(memory_hub.home, "memory", "export", "--dir", str(tmp_path / "p"),
                         "--prefix", "user")
    assert part["paths"] == ["user/tabs.md"]


def test_a_refused_note_and_a_quota_hit_mid_import(memory_hub: HubProcess,
                                                    tmp_path: Path) -> None:
    folder = tmp_path / "many"
    folder.mkdir()
    (folder / "big.md").write_text("x" * (65 * 1024))  # over a topic document's 64 KiB
    for number in range(1030):
        (folder / f"n{number:04}.md").write_text(f"note {number}\n")
    _, dry = _import(memory_hub, str(folder))
    assert dry["summary"] == {"refused": 7, "create": 1024, "skipped": 0}
    big = next(note for note in dry["notes"] if note["path"] == "big.md")
    assert big["error"]["quota"] == "document_bytes"
    code, out, _err = amux(memory_hub.home, "memory", "import", str(folder), "--apply")
    assert code == 6 and out["error"]["quota"] == "scope_documents"
    report = out["error"]["import"]
    assert report["summary"] == {"refused": 1, "created": 1024, "not_written": 1,
                                 "not_attempted": 5, "skipped": 0}
    written = {note["path"] for note in report["notes"] if note["action"] == "created"}
    on_disk = {path.name for path in (memory_hub.home / "memory" / "global").glob("*.md")}
    assert on_disk == written  # what was written is what it says


def test_usage_errors_name_the_fix(memory_hub: HubProcess, tmp_path: Path) -> None:
    code, out, _err = amux(memory_hub.home, "memory", "import", str(tmp_path / "nowhere"))
    assert code == 2 and "neither a folder nor a store amux knows" in out["error"]["message"]
    code, out, _ = amux(memory_hub.home, "memory", "import", "claude", "--project-id", "x")
    assert code == 2 and "KEY=ID" in out["error"]["message"]
    code, out, _ = amux(memory_hub.home, "memory", "import", "--apply")
    assert code == 2 and "amux memory import SOURCE --apply" in out["error"]["message"]
    code, out, _ = amux(memory_hub.home, "memory", "export")
    assert code == 2 and "--dir DIR" in out["error"]["message"]
    code, out, _ = amux(memory_hub.home, "memory", "import", "claude")  # nothing there
    assert code == 0 and out["notes"] == [] and out["summary"] == {"skipped": 0}


def test_without_a_source_it_says_which_stores_exist(memory_hub: HubProcess) -> None:
    home = Path(os.environ["HOME"])
    codex_store(home)
    code, out, _ = amux(memory_hub.home, "memory", "import")
    assert code == 0
    assert out["stores"] == [
        {"source": "claude", "root": str(home / ".claude" / "projects"), "exists": False,
         "notes": 0, "projects": []},
        {"source": "gemini", "root": str(home / ".gemini"), "exists": False, "notes": 0,
         "projects": []},
        {"source": "qwen", "root": str(home / ".qwen"), "exists": False, "notes": 0,
         "projects": []},
        {"source": "codex", "root": str(home / ".codex" / "memories"), "exists": True,
         "notes": 2, "projects": []},
        {"source": "kilo", "root": str(home / ".local" / "share" / "kilo" / "memory"),
         "exists": False, "notes": 0, "projects": []}]


SEGMENT = st.text("abcdefghij0123456789_-", min_size=1, max_size=8)
TEXT = st.text(st.sampled_from("abc xyz\n#-:*记忆é\t"), max_size=300)


@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.dictionaries(st.lists(SEGMENT, min_size=1, max_size=3).map("/".join), TEXT,
                       min_size=1, max_size=8))
def test_import_twice_and_export_import_are_fixed_points(
        memory_hub: HubProcess, monkeypatch: pytest.MonkeyPatch, files: dict[str, str]) -> None:
    from amux.client.stores import Options, gather
    from amux.client.transfer import export_dir, run_import
    from amux.client.transport import hub_client

    paths = {f"{path}.md" for path in files}
    if any(other.startswith(path[:-3] + "/") for path in paths for other in paths):
        return  # a file and a folder of the same name cannot both exist
    monkeypatch.setenv("AMUX_HOME", str(memory_hub.home))
    with tempfile.TemporaryDirectory() as temp, hub_client() as client:
        folder = Path(temp) / "in"
        for path, text in files.items():
            (folder / f"{path}.md").parent.mkdir(parents=True, exist_ok=True)
            (folder / f"{path}.md").write_text(text)
        into = f"case{next(CASES)}/"
        options = Options(into=into)
        first = run_import(client, gather(str(folder), os.environ, options), True, False)
        assert {note["action"] for note in first["notes"]} <= {"created", "duplicate"}
        again = run_import(client, gather(str(folder), os.environ, options), True, False)
        assert {note["action"] for note in again["notes"]} <= {"same", "duplicate"}
        exported = export_dir(client, str(Path(temp) / "out"), into)
        back = run_import(client, gather(exported["dir"], os.environ, Options()), True, False)
        assert {note["action"] for note in back["notes"]} <= {"same"}
        assert sorted(exported["paths"]) == sorted(
            note["path"] for note in first["notes"] if note["action"] == "created")
        for path in exported["paths"]:  # byte for byte what was imported
            assert (Path(temp) / "out" / path).read_text() == \
                (folder / path.removeprefix(into)).read_text()


def test_export_of_a_scope_past_one_listing_page_writes_every_document(
        memory_hub: HubProcess, tmp_path: Path) -> None:
    """A scope may hold 1,024 documents and one `list` answers 1,000: export pages on."""
    for number in range(1010):
        status, _ = memory_hub.call("/v1/memory/upsert", {
            "path": f"n/{number:04d}.md", "content": f"note {number}\n",
            "expected_revision": "absent"})
        assert status == 200
    out_dir = tmp_path / "export"
    code, exported, err = amux(memory_hub.home, "memory", "export", "--dir", str(out_dir))
    assert code == 0, err
    assert exported["documents"] == 1010 and exported["truncated"] is False
    assert len(list((out_dir / "n").iterdir())) == 1010
