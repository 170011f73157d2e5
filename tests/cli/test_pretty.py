"""`--pretty`: rich views in the installed `amux`, indented JSON in the bare client."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.script import console
from tests.hubproc import HubProcess, amux


def test_pretty_views(memory_hub: HubProcess) -> None:
    amux(memory_hub.home, "memory", "upsert", "projects/p/a.md", "--expected-revision", "absent",
         stdin="# Title\nuse pytest always\n")
    code, shown, _ = amux(memory_hub.home, "memory", "--pretty", "search", "pytest")
    assert code == 0 and "projects/p/a.md" in shown and "2: use pytest always" in shown
    assert "1 files scanned" in shown
    code, page, _ = amux(memory_hub.home, "memory", "--pretty", "show", "projects/p/a.md")
    assert code == 0 and "use pytest always" in page and "lines 1-2 of 2" in page
    code, listed, _ = amux(memory_hub.home, "memory", "--pretty", "list")
    assert code == 0 and "projects/p/a.md" in listed and "revision" in listed
    who = amux(memory_hub.home, "memory", "log")[1]["changes"][0]["principal"]
    assert f" {who} " in listed  # who made the document's content
    code, error, _ = amux(memory_hub.home, "memory", "--pretty", "show", "../x.md")
    assert code == 2 and "invalid_path" in str(error)


def test_bare_client_pretty_is_indented_json(memory_hub: HubProcess) -> None:
    environment = {**os.environ, "AMUX_HUB": f"unix:{memory_hub.socket_path}",
                   "AMUX_TOKEN": memory_hub.owner_token}
    done = subprocess.run([sys.executable, "-m", "amux.client.cli", "--pretty", "show", "a.md"],
                          capture_output=True, text=True, env=environment, timeout=60)
    assert done.stdout.startswith("{\n  ") and done.returncode == 1
    assert json.loads(done.stdout)["error"]["code"] == "not_found"


def test_text_that_looks_like_markup_is_shown_as_it_is(memory_hub: HubProcess) -> None:
    """A document or snippet with `[/]` or `[bold]` in it crashed the table (rich's
    MarkupError: `internal`) or lost the text."""
    text = "x [/] y [bold]pytest[/bold] z\n"
    amux(memory_hub.home, "memory", "upsert", "notes/[bold]odd.md", "--expected-revision",
         "absent", stdin=text)
    code, shown, err = amux(memory_hub.home, "memory", "--pretty", "search", "pytest")
    assert code == 0, err
    assert "notes/[bold]odd.md" in shown and "[/] y [bold]pytest[/bold] z" in shown
    code, listed, err = amux(memory_hub.home, "memory", "--pretty", "list")
    assert code == 0 and "notes/[bold]odd.md" in listed, err


def test_search_ranks_a_path_alone_last_and_says_so(memory_hub: HubProcess) -> None:
    """`amux memory search hub` returned every `projects/github.com-acme-hub/…` document,
    with no line hit, before the note that says "hub" (or instead of it)."""
    home = memory_hub.home
    for name in ("ci", "deploy", "style"):
        amux(home, "memory", "upsert", f"projects/github.com-acme-hub/{name}.md",
             "--expected-revision", "absent", stdin="nothing relevant\n")
    amux(home, "memory", "upsert", "notes/ports.md", "--expected-revision", "absent",
         stdin="the Hub listens on 8080\n")
    code, found, _ = amux(home, "memory", "search", "hub", "--limit", "3")
    assert code == 0 and [(r["path"], bool(r["hits"])) for r in found["results"]] == [
        ("notes/ports.md", True), ("projects/github.com-acme-hub/ci.md", False),
        ("projects/github.com-acme-hub/deploy.md", False)]
    done = console(home, "memory", "search", "hub", "--limit", "3", "--pretty",
                   env={"COLUMNS": "100"})
    rows = [line for line in done.stdout.splitlines() if ".md" in line]
    assert "notes/ports.md" in rows[0] and "1: the Hub listens on 8080" in rows[0]
    assert [("(path only: no line matches)" in row) for row in rows] == [False, True, True]


@pytest.mark.parametrize(("columns", "headers"), [
    ("80", ["path", "bytes", "revision", "modified", "by"]),
    ("60", ["path", "bytes", "revision"])])
def test_list_at_80_and_60_columns_tells_every_path_apart(
        memory_hub: HubProcess, columns: str, headers: list[str]) -> None:
    """At 80 columns every project path was cut to the same start
    (`projects/github.com-ac…`). A path loses its middle now, keeping its start and the
    end that tells it apart (`projects/…cme-hub/decisions.md`); who (`by`) goes first
    when the table does not fit, then the date."""
    paths = [f"projects/github.com-acme-{name}/decisions.md"
             for name in ("billing-service", "hub", "web")]
    for path in paths:
        amux(memory_hub.home, "memory", "upsert", path, "--expected-revision", "absent",
             stdin="# Decisions\n")
    done = console(memory_hub.home, "memory", "list", "--pretty", env={"COLUMNS": columns})
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert max(len(line) for line in lines) <= int(columns)
    assert [cell.strip() for cell in lines[1].split("┃")[1:-1]] == headers
    cells = [line.split("│")[1].strip() for line in lines if line.startswith("│")]
    for cell in cells:
        start, cut, end = cell.partition("…")
        assert cut and len(start) >= 4 and end.endswith("/decisions.md"), cell
        assert [path for path in paths if path.startswith(start) and path.endswith(end)] == [
            paths[cells.index(cell)]]


def test_import_and_export_for_people(memory_hub: HubProcess, tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "a.md").write_text("a note\n")
    (folder / "key.md").write_text("deploy with AKIAIOSFODNN7EXAMPLF\n")
    env = {"COLUMNS": "120"}
    code, shown, _ = amux(memory_hub.home, "memory", "import", str(folder), "--pretty", env=env)
    assert code == 0 and "create" in shown and "a.md" in shown
    assert "secret_detected (line 1, aws-access-key-id): never stored" in shown
    assert "AKIAIOSFODNN7EXAMPLF" not in shown
    assert "1 create, 1 refused, 0 skipped; a dry" in " ".join(shown.split())
    code, exported, _ = amux(memory_hub.home, "memory", "export", "--dir",
                             str(tmp_path / "out"), "--pretty", env=env)
    assert code == 0 and f"0 documents, 0 bytes written to {tmp_path / 'out'}" in exported
    amux(memory_hub.home, "memory", "import", str(folder), "--apply")
    code, log, _ = amux(memory_hub.home, "memory", "log", "--pretty", env={"COLUMNS": "200"})
    assert code == 0 and f"(import folder {folder}/a.md)" in log
