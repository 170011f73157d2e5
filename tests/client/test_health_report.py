"""`amux memory doctor` end to end: the planted fixture scope in a real Hub (issue 7).

`fixtures/doctor/` holds one planted case per check (listed in its PLANTED.txt)
and clean control documents. The test copies it into the Hub's global scope,
writes the one large document and sets every mtime (the checkout's own dates
must not decide what is stale), then asserts that every planted case is reported
in its category on its path, and nothing else.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from amux.client.args import quick_parse
from amux.client.cli import COMMANDS, PARSER
from amux.errors import AmuxError
from tests.hubproc import HubProcess, amux

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "doctor"
DAY = 86_400

EXPECTED = {
    ("entry_size", "MEMORY.md"),
    ("entry_detail", "MEMORY.md"),
    ("unreadable", "notes/latin1.md"),
    ("missing_description", "notes/half.md"),
    ("missing_description", "notes/scratch.md"),
    ("duplicate_name", "feedback/testing.md"),
    ("near_duplicate", "projects/github.com-acme-widget/notes/deploy.md"),
    ("broken_link", "reference/links.md"),
    ("project_id", "projects/widget/"),
    ("missing_link", "reference/tools.md"),
    ("stale", "reference/old-runbook.md"),
    ("quota", "reference/large.md"),
    ("note_format", "feedback/review.md"),
    ("relative_date", "notes/moved.md"),
    ("unindexed", "preferences/editor.md"),
}
CLEAN = ("preferences/style.md", "preferences/commit-messages.md",
         "projects/github.com-acme-widget/decisions.md",
         "projects/github.com-acme-widget/deploy.md")


def plant(hub: HubProcess) -> Path:
    """The fixture in the Hub's global scope, with fresh mtimes and one 120-day-old file."""
    scope = hub.home / "memory" / "global"
    shutil.copytree(FIXTURE, scope, dirs_exist_ok=True)
    rows = "".join(f"- row {i:04d}: checksum {hashlib.sha256(str(i).encode()).hexdigest()}\n"
                   for i in range(700))
    large = ("---\nname: large\ndescription: A generated table near the topic limit.\n"
             "metadata:\n  type: reference\n---\n" + rows)
    assert 0.8 * 65536 <= len(large.encode()) <= 65536
    (scope / "reference" / "large.md").write_text(large)
    now = time.time()
    scope.chmod(0o700)
    for path in scope.rglob("*"):
        path.chmod(0o600 if path.is_file() else 0o700)  # as the Hub keeps them (SPEC §2)
        if path.is_file():
            os.utime(path, (now, now))
    old = now - 120 * DAY
    os.utime(scope / "reference" / "old-runbook.md", (old, old))
    return scope


def snapshot(root: Path) -> dict[str, tuple[bytes, int]]:
    return {str(path.relative_to(root)): (path.read_bytes(), path.stat().st_mtime_ns)
            for path in sorted(root.rglob("*")) if path.is_file()}


def test_every_planted_case_in_its_category_and_nothing_else(memory_hub: HubProcess) -> None:
    scope = plant(memory_hub)
    before = snapshot(scope)
    code, out, err = amux(memory_hub.home, "memory", "doctor", "--json")
    assert code == 0, err
    found = [(finding["category"], finding["path"]) for finding in out["findings"]]
    assert sorted(found) == sorted(EXPECTED)
    assert not {path for _category, path in found} & set(CLEAN)
    assert out["counts"] == {category: sum(1 for c, _p in EXPECTED if c == category)
                             for category in {c for c, _p in EXPECTED}}
    assert out["truncated"] is False and out["incomplete"] is False
    assert (out["scope"], out["documents"]) == ("global", 19)
    by_key = {(finding["category"], finding["path"]): finding for finding in out["findings"]}
    assert by_key[("entry_size", "MEMORY.md")]["severity"] == "error"
    assert by_key[("missing_link", "reference/tools.md")]["severity"] == "note"
    assert "[[release-checklist]]" in by_key[("missing_link", "reference/tools.md")]["message"]
    assert by_key[("stale", "reference/old-runbook.md")]["severity"] == "note"
    review = by_key[("note_format", "feedback/review.md")]
    assert review["severity"] == "warning"
    assert "**Why:** and **How to apply:** lines" in review["message"]
    assert "'last week'" in by_key[("relative_date", "notes/moved.md")]["message"]
    assert by_key[("near_duplicate", "projects/github.com-acme-widget/notes/deploy.md")][
        "related"] == ["projects/github.com-acme-widget/deploy.md"]
    assert by_key[("duplicate_name", "feedback/testing.md")]["related"] == [
        "reference/testing-notes.md"]
    assert "reference/removed-runbook.md" in by_key[("broken_link", "reference/links.md")][
        "message"]
    entry = out["entry"]
    assert entry["bytes"] > 2048 and entry["detail_lines"] > 0
    assert {block["kind"] for block in entry["detail"]} == {
        "paragraph", "code block", "long line", "table"}
    quota = {row["quota"]: row for row in out["quota"]}
    assert set(quota) == {"entry_bytes", "entry_lines", "document_bytes", "scope_documents",
                          "scope_bytes", "search_scan_bytes", "search_scan_entries",
                          "path_bytes", "segment_bytes", "history_bytes"}
    assert 0 <= quota["history_bytes"]["used"] < quota["history_bytes"]["limit"]
    assert quota["document_bytes"]["path"] == "reference/large.md"
    assert quota["scope_documents"]["used"] == 19
    assert snapshot(scope) == before  # read-only: not a byte or a timestamp changed


def test_open_modes_and_lookalike_names_are_reported_and_a_restart_fixes_modes(
    short_home: Path,
) -> None:
    hub = HubProcess(short_home)
    try:
        hub.call("/v1/admin/config", {"action": "set", "key": "memory.enabled", "value": "true"})
        scope = short_home / "memory" / "global"
        notes = scope / "notes"
        notes.mkdir(parents=True, mode=0o755)
        notes.chmod(0o755)
        (notes / "open.md").write_text("added by hand\n")
        (notes / "open.md").chmod(0o644)
        nfc, nfd = "notes/caf\u00e9.md", "notes/cafe\u0301.md"
        for name in (nfc, nfd):
            (scope / name).write_text("two forms of one name\n")
            (scope / name).chmod(0o600)
        code, out, err = amux(short_home, "memory", "doctor", "--json")
        assert code == 0, err
        found = {(f["category"], f["path"]) for f in out["findings"]}
        assert ("permissions", "notes/") in found and ("permissions", "notes/open.md") in found
        lookalike = [f for f in out["findings"] if f["category"] == "lookalike_name"]
        assert len(lookalike) == 1
        assert {lookalike[0]["path"], *lookalike[0]["related"]} == {nfc, nfd}
        hub.stop()
        hub = HubProcess(short_home)  # the Hub makes the store private again at start
        assert oct(notes.stat().st_mode & 0o777) == oct(0o700)
        assert oct((notes / "open.md").stat().st_mode & 0o777) == oct(0o600)
        code, out, err = amux(short_home, "memory", "doctor", "--json")
        assert not [f for f in out["findings"] if f["category"] == "permissions"]
    finally:
        hub.stop()


def test_readable_report_and_pretty(memory_hub: HubProcess) -> None:
    plant(memory_hub)
    code, text, err = amux(memory_hub.home, "memory", "doctor")
    assert code == 0, err
    assert isinstance(text, str) and text.startswith("amux memory doctor: scope global: 19 ")
    for category, path in EXPECTED:
        assert f"\n{category} (" in text and f" {path}\n" in text
    assert "Findings: 15 (1 error, 10 warnings, 4 notes)" in text
    assert "Quota headroom" in text and "document_bytes" in text
    code, pretty, err = amux(memory_hub.home, "memory", "--pretty", "doctor")
    assert code == 0, err
    assert "near_duplicate" in pretty and "segment_bytes" in pretty


def test_empty_scope_and_errors(memory_hub: HubProcess) -> None:
    code, text, _ = amux(memory_hub.home, "memory", "doctor")
    assert code == 0 and "No findings." in text and "MEMORY.md: none" in text
    code, out, _ = amux(memory_hub.home, "memory", "doctor", "--json")
    assert (code, out["documents"], out["findings"], out["counts"]) == (0, 0, [], {})
    status, body = memory_hub.call("/v1/memory/doctor", {"path_prefix": "x"})
    assert (status, body["error"]["code"]) == (400, "invalid_argument")
    code, out, _ = amux(memory_hub.home, "memory", "doctor", "--json=yes")
    assert (code, out["error"]["code"]) == (2, "invalid_argument")
    memory_hub.call("/v1/admin/config", {"action": "set", "key": "memory.enabled",
                                         "value": "false"})
    code, out, err = amux(memory_hub.home, "memory", "doctor", "--json")
    assert (code, out["error"]["code"]) == (4, "memory_disabled") and err.count("\n") == 1


def test_isolated_caller_sees_only_its_own_scope(memory_hub: HubProcess) -> None:
    plant(memory_hub)
    memory_hub.call("/v1/admin/config", {"action": "set", "key": "isolation.enabled",
                                         "value": "true"})
    _status, bob = memory_hub.call("/v1/admin/principals", {"action": "add", "name": "bob"})
    env = {"AMUX_HUB": f"unix:{memory_hub.socket_path}", "AMUX_TOKEN": bob["token"]}
    amux(memory_hub.home, "memory", "upsert", "projects/bobs-repo/a.md",
         "--expected-revision", "absent", stdin="bob's own note\n", env=env)
    code, out, err = amux(memory_hub.home, "memory", "doctor", "--json", env=env)
    assert code == 0, err
    assert out["scope"].startswith("principal:") and out["documents"] == 1
    assert sorted((f["category"], f["path"]) for f in out["findings"]) == [
        ("entry_missing", "MEMORY.md"), ("missing_description", "projects/bobs-repo/a.md"),
        ("project_id", "projects/bobs-repo/")]


@pytest.mark.parametrize("argv", [["doctor"], ["doctor", "--json"], ["--pretty", "doctor"],
                                  ["--pretty", "doctor", "--json"]])
def test_doctor_takes_the_quick_path(argv: list[str]) -> None:
    quick = quick_parse(COMMANDS, ("--pretty",), argv)
    assert quick is not None
    assert vars(quick) == vars(PARSER.argparse(argv).parse_args(argv))


@pytest.mark.parametrize("argv", [["doctor", "--json=1"], ["doctor", "x"]])
def test_doctor_odd_calls_go_to_argparse(argv: list[str]) -> None:
    assert quick_parse(COMMANDS, ("--pretty",), argv) is None
    with pytest.raises((AmuxError, SystemExit)):
        PARSER.argparse(argv).parse_args(argv)


def test_doctor_abbreviation_is_argparse_s() -> None:
    argv = ["doctor", "--js"]
    assert quick_parse(COMMANDS, ("--pretty",), argv) is None
    assert PARSER.argparse(argv).parse_args(argv).json is True


@settings(max_examples=1500, deadline=None)
@given(st.lists(st.sampled_from(["doctor", "--json", "--json=", "--json=1", "--pretty", "--",
                                 "-h", "x", "list", "--limit", "3"]), max_size=5))
def test_quick_parse_agrees_with_argparse_on_doctor(argv: list[str]) -> None:
    quick = quick_parse(COMMANDS, ("--pretty",), argv)
    if quick is None:
        return
    assert vars(quick) == vars(PARSER.argparse(argv).parse_args(argv)), argv
