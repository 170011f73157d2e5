"""The agents' store layouts and the pieces of an import, without a Hub
(`amux.client.stores`, `amux.client.transfer`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from amux.client.stores import (
    Gathered,
    Note,
    find_sanitized,
    gemini_added,
    has_front_matter,
    remote_id,
    sanitized,
    with_front_matter,
)
from amux.client.transfer import SOURCE_MAX_CHARS, provenance
from amux.memory.frontmatter import front_matter


@pytest.mark.parametrize(("url", "stable"), [
    ("git@github.com:acme/shop.git", "github.com-acme-shop"),
    ("https://github.com/acme/shop", "github.com-acme-shop"),
    ("https://user@github.com/acme/shop.git/", "github.com-acme-shop"),
    ("ssh://git@git.example.com:2222/team/shop.git", "git.example.com-2222-team-shop"),
])
def test_remote_id_is_the_guides(url: str, stable: str) -> None:
    assert remote_id(url) == stable


def test_an_encoded_path_is_found_again(tmp_path: Path) -> None:
    repo = tmp_path / "my_repo.v2" / "sub dir"
    repo.mkdir(parents=True)
    (tmp_path / "my-repo-v2").mkdir()  # encodes the same prefix: the search goes on
    assert sanitized(str(repo)).startswith("-")
    assert find_sanitized(sanitized(str(repo))) == str(repo)
    assert find_sanitized(sanitized(str(tmp_path / "gone"))) is None
    assert find_sanitized("no-leading-dash") is None


def test_gemini_added_memories_is_only_that_section() -> None:
    text = "# Rules\n\nBe brief.\n\n## Gemini Added Memories\n- a\n- b\n\n## Later\nno\n"
    assert gemini_added(text) == "- a\n- b\n"
    assert gemini_added("# nothing here\n") is None
    assert gemini_added("## Gemini Added Memories\n\n") is None


def test_front_matter_is_added_only_where_missing() -> None:
    kept = "---\nname: x\ndescription: y\n---\nbody\n"
    assert with_front_matter(kept, "n", "project", 0) == kept
    added = with_front_matter('# "Quoted" title\nbody\n', "n", "project", 86400 * 365)
    fields, body_line = front_matter(added)
    assert fields is not None and fields["name"] == "n" and has_front_matter(added)
    assert fields["description"] == '\\"Quoted\\" title'  # JSON escapes, valid YAML
    assert "  updated: 1971-01-01\n" in added
    assert added.split("\n")[body_line:] == ['# "Quoted" title', "body", ""]


@given(st.text(max_size=2000))
def test_provenance_is_one_printable_bounded_line(path: str) -> None:
    said = provenance("claude", path)
    assert said.isprintable() and len(said) <= SOURCE_MAX_CHARS
    assert said.startswith("import claude ")


def test_a_folder_walk_says_what_it_leaves_out(tmp_path: Path) -> None:
    from amux.client.stores import Options, gather

    (tmp_path / "a.md").write_text("a\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.md").write_text("b\n")
    (tmp_path / ".hidden").mkdir()
    (tmp_path / "link.md").symlink_to(tmp_path / "a.md")
    (tmp_path / "latin1.md").write_bytes(b"caf\xe9\n")
    (tmp_path / "notes.txt").write_text("not markdown\n")
    (tmp_path / b"bad\xff.md".decode("utf-8", "surrogateescape")).write_text("x\n")
    found = gather(str(tmp_path), {}, Options(into="in/"))
    assert [(note.path, note.content) for note in found.notes] == [
        ("in/a.md", "a\n"), ("in/sub/b.md", "b\n")]
    reasons = {Path(skip.source).name: skip.reason for skip in found.skipped}
    assert reasons["link.md"] == "a symbolic link (not followed)"
    assert reasons[".hidden"].startswith("a hidden entry")
    assert reasons["latin1.md"] == "not UTF-8 at byte 3"
    assert reasons["bad\ufffd.md"] == "a name that is not UTF-8 (an amux path is)"
    assert "notes.txt" not in reasons


class FlakyHub:
    """A Hub's answers for `run_import` (client logic alone): documents in a dict; after
    `fail_after` writes, every upsert fails with `error`; `racing` is written by someone
    else just before the import's write of it."""

    def __init__(self, fail_after: int, error: str, racing: str | None = None) -> None:
        self.documents: dict[str, str] = {}
        self.fail_after = fail_after
        self.error = error
        self.racing = racing

    def call(self, path: str, body: dict[str, Any]) -> Any:
        from amux.client.transfer import revision
        from amux.errors import from_wire

        if path == "/v1/memory/list":
            return {"documents": [{"path": key, "revision": revision(text.encode()),
                                   "bytes": len(text.encode())}
                                  for key, text in sorted(self.documents.items())],
                    "truncated": False}
        assert path == "/v1/memory/upsert" and "dry_run" not in body
        if body["path"] == self.racing:
            self.documents[body["path"]] = "written meanwhile\n"
        if body["path"] in self.documents and body["expected_revision"] == "absent":
            raise from_wire("revision_conflict", "changed", {"current_revision": "x"})
        if len(self.documents) >= self.fail_after:
            raise from_wire(self.error, "the disk is full", {"errno": "ENOSPC"})
        self.documents[body["path"]] = body["content"]
        return {"path": body["path"], "revision": "r", "created": True}


def _notes(count: int) -> Gathered:
    return Gathered("folder", "/src", [Note(f"/src/n{n}.md", f"n{n}.md", f"note {n}\n")
                                       for n in range(count)], [], [])


def test_a_fault_mid_import_reports_what_was_written() -> None:
    from amux.client.transfer import run_import
    from amux.errors import AmuxError

    hub = FlakyHub(fail_after=3, error="storage_unavailable", racing="n1.md")
    with pytest.raises(AmuxError) as raised:
        run_import(hub, _notes(6), apply=True, overwrite=False)  # type: ignore[arg-type]
    assert raised.value.code == "storage_unavailable" and raised.value.exit_code == 8
    report = raised.value.details["import"]
    actions = {note["path"]: note["action"] for note in report["notes"]}
    assert actions == {"n0.md": "created", "n1.md": "refused", "n2.md": "created",
                       "n3.md": "not_written", "n4.md": "not_attempted",
                       "n5.md": "not_attempted"}
    assert report["notes"][1]["error"]["code"] == "revision_conflict"  # went on after it
    assert {path for path, action in actions.items() if action == "created"} == \
        set(hub.documents) - {"n1.md"}  # what it says was written is what was written


def test_two_checkouts_of_one_repository_do_not_race_for_a_path() -> None:
    from amux.client.transfer import run_import

    hub = FlakyHub(fail_after=99, error="internal")
    found = Gathered("claude", "/c", [
        Note("/c/-home-u-shop/memory/a.md", "projects/github.com-acme-shop/a.md", "one\n"),
        Note("/c/-home-u-work-shop/memory/a.md", "projects/github.com-acme-shop/a.md", "two\n"),
        Note("/c/-home-u-work-shop/memory/b.md", "projects/github.com-acme-shop/b.md", "one\n"),
    ], [], [])
    report = run_import(hub, found, apply=True, overwrite=False)  # type: ignore[arg-type]
    assert [note["action"] for note in report["notes"]] == ["created", "differs", "duplicate"]
    assert report["notes"][1]["same_path_as"] == "/c/-home-u-shop/memory/a.md"
    assert hub.documents == {"projects/github.com-acme-shop/a.md": "one\n"}


def test_a_remote_with_a_token_in_it_is_never_shown(tmp_path: Path) -> None:
    import os
    import subprocess

    from amux.client.stores import project

    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    subprocess.run(["git", "-C", str(tmp_path), "remote", "add", "origin",
                    "https://me:ghp_notarealtoken123@github.com/acme/shop.git"], check=True)
    found = project("-x", str(tmp_path), os.environ, {}, "the folder name -x")
    assert found.id == "github.com-acme-shop"
    assert found.why == "the repository's remote https://github.com/acme/shop.git"
