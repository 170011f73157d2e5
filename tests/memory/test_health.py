"""The memory doctor's checks, thresholds and bounds, on a real store in a temp dir."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from amux.encoding import encoded_size
from amux.memory import GLOBAL, Store, documents, health

NOW = 1_800_000_000.0
DAY = 86_400
FRONT = "---\nname: {name}\ndescription: {name} in one line.\nmetadata:\n  type: reference\n---\n"


def write(root: Path, files: dict[str, str | bytes], mtime: float = NOW) -> None:
    scope = root / "global"
    for path, content in files.items():
        target = scope / path
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, str):
            content = content.encode()
        target.write_bytes(content)
        os.utime(target, (mtime, mtime))


def run(root: Path) -> dict[str, Any]:
    with Store(root, wall_clock=lambda: NOW) as store:
        return store.doctor(GLOBAL)


def found(result: dict[str, Any], index: bool = False) -> set[tuple[str, str | None]]:
    """(category, path) of each finding; `unindexed` only when asked (its own tests):
    most cases here have no MEMORY.md line for their documents."""
    return {(finding["category"], finding["path"]) for finding in result["findings"]
            if index or finding["category"] != "unindexed"}


def without_index(result: dict[str, Any]) -> list[dict[str, Any]]:
    return [finding for finding in result["findings"] if finding["category"] != "unindexed"]


def topic(name: str, body: str) -> str:
    return FRONT.format(name=name) + body


# -- the entry ----------------------------------------------------------------------------


def test_entry_size_thresholds(tmp_path: Path) -> None:
    write(tmp_path, {"MEMORY.md": "- x\n" * 52})  # 52 lines >= 80% of 64
    result = run(tmp_path)
    assert found(result) == {("entry_size", "MEMORY.md")}
    assert result["findings"][0]["severity"] == "warning"
    write(tmp_path, {"MEMORY.md": "- x\n" * 51})
    assert found(run(tmp_path)) == set()
    write(tmp_path, {"MEMORY.md": "- " + "x" * 2100 + "\n" + "- y\n" * 64})  # both over
    result = run(tmp_path)
    assert [(f["category"], f["severity"]) for f in result["findings"]] == [
        ("entry_size", "error"), ("entry_size", "error"), ("entry_detail", "warning")]
    assert "entry_bytes" in result["findings"][0]["message"]
    assert "entry_lines" in result["findings"][1]["message"]


def test_missing_entry_is_a_note_only_when_there_is_something_else(tmp_path: Path) -> None:
    assert run(tmp_path)["findings"] == []  # no scope directory at all
    write(tmp_path, {"a.md": topic("a", "alpha\n")})
    result = run(tmp_path)
    assert found(result) == {("entry_missing", "MEMORY.md")} and result["entry"] is None


# -- front matter, descriptions, names ---------------------------------------------------


def test_descriptions_and_duplicate_names(tmp_path: Path) -> None:
    write(tmp_path, {
        "MEMORY.md": "- pointers\n",
        "a.md": "no front matter at all\n",
        "b.md": "---\nname: Deploy\n---\nfirst deploy note about canaries\n",
        "c/d.md": "---\nname: ' deploy '\ndescription: second\n---\nrollback drills quarterly\n",
        "e.md": topic("unique", "nothing in common\n"),
        "sub/MEMORY.md": "a sub-folder entry is a topic document\n",
    })
    result = run(tmp_path)
    assert found(result) == {("missing_description", "a.md"), ("missing_description", "b.md"),
                             ("missing_description", "sub/MEMORY.md"),
                             ("duplicate_name", "b.md"),
                             ("note_format", "b.md"), ("note_format", "c/d.md")}  # no type
    duplicate = next(f for f in result["findings"] if f["category"] == "duplicate_name")
    assert duplicate["related"] == ["c/d.md"]


# -- near duplicates -----------------------------------------------------------------------

NOTE = ("The ledger service deploys from main through the blue green pipeline. Production "
        "deploys happen on {day} after the change meeting. The pipeline runs smoke tests, "
        "shifts ten percent of traffic, waits fifteen minutes and then moves the rest.")


def test_near_duplicates_one_finding_per_later_document(tmp_path: Path) -> None:
    write(tmp_path, {
        "MEMORY.md": "- pointers\n",
        "a.md": topic("a", NOTE.format(day="Tuesdays")),
        "b.md": topic("b", NOTE.format(day="Fridays")),
        "c.md": topic("c", NOTE.format(day="Tuesdays")),  # identical body to a.md
        "d.md": topic("d", "Completely different: the cache warms from the nightly dump."),
        "e.md": topic("e", "too short"),
        "f.md": topic("f", "too short"),
    })
    result = run(tmp_path)
    assert found(result) == {("near_duplicate", "b.md"), ("near_duplicate", "c.md")}
    related = {f["path"]: (f["related"], f["message"]) for f in without_index(result)}
    assert related["b.md"][0] == ["a.md"]
    assert related["c.md"][0] == ["a.md"] and related["c.md"][1].startswith("100%")


def test_near_duplicates_in_chinese(tmp_path: Path) -> None:
    text = ("生产环境的部署在每周{day}进行，先在预发环境跑冒烟测试，"
            "然后切百分之十的流量，等待十五分钟后再全部切换。")
    write(tmp_path, {"MEMORY.md": "- pointers\n", "zh/a.md": topic("a", text.format(day="二")),
                     "zh/b.md": topic("b", text.format(day="五"))})
    assert found(run(tmp_path)) == {("near_duplicate", "zh/b.md")}


# -- links ---------------------------------------------------------------------------------


def test_link_resolution(tmp_path: Path) -> None:
    write(tmp_path, {
        "MEMORY.md": "- [[Style Guide]] [[deploy]] [[ops/runbook]] [d](ops/deploy.md)\n",
        "prefs/style.md": "---\nname: style guide\ndescription: s\ntype: feedback\n---\n"
                          "style rules\n**Why:** one voice\n**How to apply:** always\n",
        "ops/deploy.md": topic("deploy-notes", "[[missing one]] [r](runbook.md) "
                                               "[r2](ops/runbook.md) [gone](../gone.md)\n"),
        "ops/runbook.md": topic("runbook", "page the secondary\n"),
    })
    result = run(tmp_path)
    assert found(result) == {("missing_link", "ops/deploy.md"), ("broken_link", "ops/deploy.md")}
    messages = sorted(f["message"] for f in result["findings"])
    assert "[[missing one]]" in messages[0] and "../gone.md" in messages[1]


def test_links_in_a_longer_fence_are_code(tmp_path: Path) -> None:
    """Issue 13: a ``` line inside a ```` fence neither closes it nor exposes its links."""
    write(tmp_path, {"MEMORY.md": "- p\n", "a.md": topic("a", "````md\n```\n[[inside]]\n"
                                                               "[b](gone.md)\n```\n````\n")})
    assert found(run(tmp_path)) == set()


# -- the index (MEMORY.md: one line per topic, the note guide) -------------------------------


def test_a_document_no_line_of_the_index_reaches_is_a_note(tmp_path: Path) -> None:
    write(tmp_path, {
        "MEMORY.md": "- [Deploys](projects/github.com-acme-shop/deploy.md) — canary first\n"
                     "- Style: [[style]]; tools under `reference/` and ./user/editor.md.\n",
        "projects/github.com-acme-shop/deploy.md": topic("deploy", "canary first\n"),
        "preferences/code.md": topic("style", "small functions\n"),  # by its name
        "reference/ci.md": topic("ci", "CI runs on push\n"),  # its folder
        "reference/deep/more.md": topic("more", "deeper still\n"),
        "user/editor.md": topic("editor", "helix\n"),
        "user/editor.md.bak.md": topic("editor-bak", "not the same path\n"),
        "lonely.md": topic("lonely", "nothing points here\n"),
        "projects/github.com-acme-shop/ci.md": topic("shop-ci", "not the shop's deploy\n"),
        "projects/github.com-acme-shop/deploy.sync-conflict-0123456789ab.md":
            topic("deploy", "the other side\n"),  # sync_conflict says it, not the index
    })
    result = run(tmp_path)
    unindexed = {f["path"]: f for f in result["findings"] if f["category"] == "unindexed"}
    assert set(unindexed) == {"lonely.md", "user/editor.md.bak.md",
                              "projects/github.com-acme-shop/ci.md"}
    assert all(f["severity"] == "note" for f in unindexed.values())
    assert "`- [Title](lonely.md) — hook`" in unindexed["lonely.md"]["message"]


def test_many_unindexed_documents_of_a_folder_are_one_finding(tmp_path: Path) -> None:
    notes = {f"notes/n{i}.md": topic(f"n{i}", f"fact {i}\n") for i in range(health.INDEX_FOLDER_AT)}
    write(tmp_path, {"MEMORY.md": "- [One](notes/n0.md) — the first\n", **notes,
                     **{f"more/m{i}.md": topic(f"m{i}", f"m {i}\n") for i in range(5)}})
    result = run(tmp_path)
    unindexed = [f for f in result["findings"] if f["category"] == "unindexed"]
    # notes/ has INDEX_FOLDER_AT - 1 without a line: one each; more/ has 5: one for all
    assert [f["path"] for f in unindexed] == ["more/"] + [
        f"notes/n{i}.md" for i in range(1, health.INDEX_FOLDER_AT)]
    assert unindexed[0]["related"] == [f"more/m{i}.md" for i in range(5)]
    assert "`- [Topic](more/) — hook`" in unindexed[0]["message"]
    write(tmp_path, {"MEMORY.md": "- [More](more/) — m; [notes](notes/)\n"})
    assert found(run(tmp_path), index=True) == set()


def test_without_an_index_only_entry_missing_says_so(tmp_path: Path) -> None:
    write(tmp_path, {"a.md": topic("a", "alpha\n"), "b/c.md": topic("c", "gamma\n")})
    assert found(run(tmp_path), index=True) == {("entry_missing", "MEMORY.md")}


# -- project ids, age, quota, unreadable ------------------------------------------------------


@pytest.mark.parametrize(("folder", "stable"), [
    ("github.com-org-repo", True), ("gitlab.example.com-group-sub-repo", True),
    ("git.internal.io_team_tool", True), ("GitHub.com-Org-Repo", True),
    ("myrepo", False), ("amux", False), ("github.com", False), ("my-repo", False),
    ("repo.git", False),
])
def test_project_ids(folder: str, stable: bool) -> None:
    assert bool(health._STABLE_PROJECT_ID.fullmatch(folder)) is stable


def test_project_folders_stale_and_unreadable(tmp_path: Path) -> None:
    write(tmp_path, {"MEMORY.md": "- pointers\n",
                     "projects/github.com-a-b/x.md": topic("x", "fine\n"),
                     "projects/loose.md": topic("loose", "not in a project folder\n"),
                     "projects/myrepo/y.md": topic("y", "one\n"),
                     "projects/myrepo/z/w.md": topic("w", "two\n"),
                     "bad.md": b"---\nname: bad\n---\n\xff\n"})
    write(tmp_path, {"old.md": topic("old", "from an earlier season\n")}, mtime=NOW - 91 * DAY)
    write(tmp_path, {"edge.md": topic("edge", "exactly ninety days\n")}, mtime=NOW - 90 * DAY)
    result = run(tmp_path)
    assert found(result) == {("project_id", "projects/myrepo/"), ("stale", "old.md"),
                             ("unreadable", "bad.md")}
    project = next(f for f in result["findings"] if f["category"] == "project_id")
    assert "2 documents" in project["message"]


def test_quota_rows_and_findings(tmp_path: Path) -> None:
    big = topic("big", "".join(f"row {i} of a large table of values\n" for i in range(2000)))
    assert len(big) > 0.8 * 65536
    deep = "/".join(["d" * 200] * 4) + "/n.md"  # 808 bytes: under 80% of 1,024
    deeper = "/".join(["e" * 250] * 3) + "/" + "f" * 60 + ".md"  # 817 bytes
    write(tmp_path, {"MEMORY.md": "- pointers\n", "big.md": big,
                     deep: topic("deep", "deep\n"), deeper: topic("deeper", "deeper\n")})
    result = run(tmp_path)
    quota = {row["quota"]: row for row in result["quota"]}
    assert quota["document_bytes"] == {"quota": "document_bytes", "used": len(big),
                                       "limit": 65536, "path": "big.md"}
    assert quota["segment_bytes"]["used"] == 250
    assert quota["scope_documents"]["used"] == 4
    assert quota["search_scan_entries"]["used"] >= 6
    assert found(result) == {("quota", "big.md"), ("quota", deeper)}
    assert {f["path"]: f["message"] for f in without_index(result)}[deeper].endswith(
        "(segment_bytes): shorten the name")


def test_scope_level_quota_findings_have_no_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(health, "SCOPE_MAX_DOCUMENTS", 4)
    write(tmp_path, {"MEMORY.md": "- p\n", **{f"n{i}.md": topic(f"n{i}", f"note {i}\n")
                                                for i in range(4)}})
    result = run(tmp_path)
    assert found(result) == {("quota", None)}
    assert result["findings"][0]["severity"] == "error"
    assert "5 of 4" in result["findings"][0]["message"]


# -- bounds ----------------------------------------------------------------------------------


def test_answer_is_bounded_and_counts_stay_exact(tmp_path: Path) -> None:
    files: dict[str, str | bytes] = {"MEMORY.md": "- p\n"}
    files.update({f"n/{i:04d}-{'x' * 180}.md": f"note number {i}\n" for i in range(400)})
    write(tmp_path, files)
    result = run(tmp_path)
    assert result["counts"] == {"missing_description": 400, "unindexed": 1}  # one for n/
    assert len(result["findings"]) <= health.MAX_FINDINGS and result["truncated"] is True
    assert encoded_size(result) <= health.RESPONSE_MAX_BYTES


def test_errors_come_first(tmp_path: Path) -> None:
    files: dict[str, str | bytes] = {"MEMORY.md": "x" * 3000}
    files.update({f"n{i:03d}.md": f"note {i}\n" for i in range(300)})
    write(tmp_path, files)
    result = run(tmp_path)
    assert result["findings"][0]["category"] == "entry_size"
    assert [f["severity"] for f in result["findings"]][:1] == ["error"]


def test_read_budget_makes_it_incomplete(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(documents, "READ_MAX_DOCUMENTS", 2)
    write(tmp_path, {"MEMORY.md": "- p\n", "a.md": "no front\n", "b.md": "no front\n"})
    result = run(tmp_path)
    assert result["incomplete"] is True and result["documents"] == 3
    assert found(result) == {("missing_description", "a.md")}  # b.md counted, not read


def overlapping(count: int) -> dict[str, str | bytes]:
    """MEMORY.md and `count` topic documents that all share sentences with each other."""
    sentences = [f"sentence {i} about topic {i % 37} with detail {i * 7 % 101}."
                 for i in range(500)]
    files: dict[str, str | bytes] = {"MEMORY.md": "- p\n"}
    for n in range(count):
        body = " ".join(sentences[(n * 13 + k) % 500] for k in range(40))
        files[f"t/{n:04d}.md"] = topic(f"t{n}", body + "\n")
    return files


def test_mutually_similar_scope_stops_at_the_work_budget(tmp_path: Path) -> None:
    """1,024 documents that all overlap: the comparison stops at its budget, in bounded time."""
    write(tmp_path, overlapping(1023))
    started = time.perf_counter()
    result = run(tmp_path)
    assert time.perf_counter() - started < 10
    assert result["documents"] == 1024 and result["incomplete"] is True
    assert result["counts"]["near_duplicate"] > 100


def test_identical_copies_pair_with_the_first(tmp_path: Path) -> None:
    body = " ".join(f"word{i}" for i in range(300))
    write(tmp_path, {"MEMORY.md": "- p\n", **{f"c{i:04d}.md": topic(f"c{i}", body)
                                                for i in range(600)}})
    result = run(tmp_path)
    assert result["incomplete"] is False and result["counts"]["near_duplicate"] == 599
    assert all(f["related"] == ["c0000.md"] for f in result["findings"]
               if f["category"] == "near_duplicate")


CHILD = """
import json, sys
from pathlib import Path
from amux.memory import GLOBAL, Store
with Store(Path(sys.argv[1]), wall_clock=lambda: float(sys.argv[2])) as store:
    print(json.dumps(store.doctor(GLOBAL)))
"""


def test_the_answer_does_not_depend_on_the_hash_seed(tmp_path: Path) -> None:
    """Issue 13: two processes with different PYTHONHASHSEED give the same report. The
    scope stops the join at its budget, where the order of shingles decides what was
    found (with the salted `hash()` of str this scope gave 182 or 198 findings)."""
    write(tmp_path, overlapping(200))
    reports = []
    for seed in ("1", "2"):
        done = subprocess.run([sys.executable, "-c", CHILD, str(tmp_path), str(NOW)],
                              env={**os.environ, "PYTHONHASHSEED": seed}, capture_output=True,
                              text=True, timeout=120, check=True)
        reports.append(json.loads(done.stdout))
    assert reports[0]["incomplete"] is True and reports[0]["counts"]["near_duplicate"] > 100
    assert reports[0] == reports[1]


# -- the note guide's format (.amux/guide.md) -----------------------------------------------


def test_the_note_format_of_the_guide(tmp_path: Path) -> None:
    """What the note guide teaches is what the doctor checks, and each finding names the
    fix in the guide's words."""
    good = ("---\nname: payments-tests\ndescription: run the payments suite serially\n"
            "metadata:\n  type: feedback\n---\nRun it with -n 0.\n**Why:** one sandbox "
            "account.\n**How to apply:** any change under payments/.\n")
    write(tmp_path, {
        "MEMORY.md": "- [Payments tests](good.md) — run serially\n",
        "good.md": good,
        "user.md": "---\nname: me\ndescription: who\nmetadata:\n  type: user\n---\nSRE\n",
        "untyped.md": "---\nname: a\ndescription: b\n---\nc\n",
        "odd.md": "---\nname: a2\ndescription: b\nmetadata:\n  type: diary\n---\nc\n",
        "why.md": "---\nname: a3\ndescription: b\nmetadata:\n  type: project\n---\n"
                  "**Why:** c\n",
        "nameless.md": "---\ndescription: b\ntype: reference\n---\nc\n",
    })
    result = run(tmp_path)
    format_findings = {f["path"]: f["message"] for f in result["findings"]
                       if f["category"] == "note_format"}
    assert set(format_findings) == {"untyped.md", "odd.md", "why.md", "nameless.md"}
    assert "`metadata:` with `type: user | feedback | project | reference`" in \
        format_findings["untyped.md"]
    assert "not 'diary'" in format_findings["odd.md"]
    assert "**How to apply:** lines" in format_findings["why.md"]
    assert "**Why:**" not in format_findings["why.md"]
    assert "`name: short-kebab-case-slug`" in format_findings["nameless.md"]
    assert all("the note guide, .amux/guide.md" in m for m in format_findings.values())


def test_relative_dates_are_a_note_naming_the_fix(tmp_path: Path) -> None:
    write(tmp_path, {
        "MEMORY.md": "- [a](a.md) — x\n",
        "a.md": topic("a", "We moved the cluster last week.\n"),
        "b.md": topic("b", "Moved on 2026-11-27.\n```sh\necho today\n```\n"),
        "c.md": topic("c", "Rotated keys 3 days ago.\n"),
    })
    result = run(tmp_path)
    dates = {f["path"]: f for f in result["findings"] if f["category"] == "relative_date"}
    assert set(dates) == {"a.md", "c.md"}  # code is not prose
    assert dates["a.md"]["severity"] == "note"
    assert "'last week'" in dates["a.md"]["message"]
    assert "absolute date (YYYY-MM-DD)" in dates["a.md"]["message"]
