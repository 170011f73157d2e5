"""The classification rules on plain evidence: each fires on its case and not on its
near miss (the end-to-end tests in test_live.py drive the same rules through real agents)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from amux.eval import model_apis as apis
from amux.eval.classify import (
    classify,
    corpus,
    doctor,
    explain_offers,
    fabrications,
    negated,
    role_clauses,
    stale_lines,
)
from amux.eval.evidence import MemoryCall, Turn, Write, call_writes, memory_calls, place_of
from amux.eval.scenarios import BY_NAME, PROJECT, SCENARIOS

ROOT = Path("/runs/remember-1")


def test_fabrication_is_a_number_or_identifier_the_user_never_gave() -> None:
    given = corpus(BY_NAME["remember"])
    assert fabrications("- Yield source: MES `daily_yield` (not the QA weekly report).\n"
                        "- Staging DB port: 6543.\n", given) == []
    assert fabrications("Refreshed daily at 08:00; alert when yield > 120% or < 50%; "
                        "see qa_weekly_export.", given) == ["08:00", "120%", "50%",
                                                            "qa_weekly_export"]
    # dates, list ordinals, document paths and links are bookkeeping, not specifications
    assert fabrications("---\nupdated: 2026-07-26\n---\n1. Line 3 yield: daily_yield "
                        "([details](projects/acme-widgets/line-3.md))\n(2) port 6543\n",
                        given) == []
    assert fabrications("Rounds to 1 decimal place.", given) == []  # "one" was given


@pytest.mark.parametrize(("text", "affirmed", "inverted"), [
    ("The user is a process engineer.", 1, 0),
    ("I am a process engineer, so no need to explain Cpk or Ppk.", 1, 0),
    ("Role: process engineer (knows Cpk/Ppk)", 1, 0),
    ("Notify the process engineer when Cpk drops.", 0, 1),
    ("The user is not a process engineer.", 0, 1),
    ("Escalate yield questions to the process engineer.", 0, 1),
    ("Ask a process engineer before changing limits.", 0, 1),
])
def test_identity_inversion_clause_by_clause(text: str, affirmed: int, inverted: int) -> None:
    found = role_clauses(text, "process engineer")
    assert (len(found[0]), len(found[1])) == (affirmed, inverted)


def test_offering_to_explain_what_the_user_knows_is_inverted() -> None:
    assert explain_offers("Explain Cpk and Ppk before using them.") == [
        "Explain Cpk"]
    assert explain_offers("Don't explain Cpk or Ppk; the user knows them.") == []
    assert explain_offers("Should I explain Cpk?") == []  # a question asserts nothing
    assert negated("The QA report (not daily_yield) is authoritative.", "daily_yield")
    assert not negated("Use daily_yield, not the QA weekly report.", "daily_yield")


def test_stale_lines_are_old_values_still_stated_as_current() -> None:
    store = {"MEMORY.md": "- CI runs on Jenkins; details in ci.md\n",
             "ci.md": "CI runs on GitHub Actions (moved from Jenkins).\nJenkins was retired.\n"}
    assert stale_lines(store, ["Jenkins"], ["GitHub Actions"]) == [
        "MEMORY.md: - CI runs on Jenkins; details in ci.md"]


def test_places_of_writes_outside_memory() -> None:
    assert place_of(f"{ROOT}/work/AGENTS.md", ROOT) == "agents_md"
    assert place_of(f"{ROOT}/work/docs/CLAUDE.md", ROOT) == "agents_md"
    assert place_of(f"{ROOT}/work/src/calc.py", ROOT) == "repository"
    assert place_of(f"{ROOT}/home/.claude/projects/w/memory/MEMORY.md", ROOT) == \
        "native_memory"
    assert place_of(f"{ROOT}/home/.codex/memories/notes.md", ROOT) == "native_memory"
    assert place_of(f"{ROOT}/home/notes.md", ROOT) == "local_note"
    assert place_of(f"{ROOT}/home/.claude/projects/w/session.jsonl", ROOT) is None
    assert place_of(f"{ROOT}/tmp/scratch.md", ROOT) is None
    assert place_of("/root/.claude/CLAUDE.md", ROOT) == "agents_md"
    assert place_of("/tmp/remember.txt", ROOT) == "local_note"


def test_calls_that_write_and_calls_that_use_memory() -> None:
    echo = apis.ToolCall("c1", "Bash", {"command": "echo 'port 6543' >> NOTES.md 2>&1"})
    assert [(w.place, w.path) for w in call_writes(echo, ROOT)] == [("repository", "NOTES.md")]
    heredoc = apis.ToolCall("c2", "bash", {"command": "amux memory upsert a.md "
                                           "--expected-revision absent <<'EOF'\n> quoted\nEOF"})
    assert call_writes(heredoc, ROOT) == []
    assert [(c.op, c.via, c.path) for c in memory_calls(heredoc)] == [("upsert", "cli", "a.md")]
    patch = apis.ToolCall("c3", "apply_patch", {"input": "*** Begin Patch\n*** Update File: "
                                                "AGENTS.md\n+port 6543\n*** End Patch"})
    assert [w.place for w in call_writes(patch, ROOT)] == ["agents_md"]
    read = apis.ToolCall("c4", "Read", {"file_path": f"{ROOT}/work/AGENTS.md"})
    assert call_writes(read, ROOT) == []
    codex = apis.ToolCall("c5", "mcp__amux__memory_get", {"path": "MEMORY.md"},
                          result='{"error":{"code":"not_found"}}')
    assert [(c.op, c.path, c.ok) for c in memory_calls(codex)] == [("get", "MEMORY.md", False)]


def test_gemini_and_opencode_tools() -> None:
    """Gemini CLI's `mcp_amux_*`, `write_file`/`replace`, `run_shell_command` and GEMINI.md;
    OpenCode's `amux_*` and its `write`/`edit` tools' `filePath`."""
    for name in ("mcp_amux_memory_search", "amux_memory_search"):
        call = apis.ToolCall("c", name, {"query": "daily_yield"}, result="[]")
        assert [(c.op, c.via, c.query, c.ok) for c in memory_calls(call)] == [
            ("search", "mcp", "daily_yield", True)]
    assert memory_calls(apis.ToolCall("c", "mcp_other_memory_search", {})) == []
    assert place_of(f"{ROOT}/work/GEMINI.md", ROOT) == "agents_md"
    assert place_of(f"{ROOT}/home/.gemini/GEMINI.md", ROOT) == "native_memory"
    assert place_of(f"{ROOT}/home/.gemini/tmp/work/memory/MEMORY.md", ROOT) == "native_memory"
    assert place_of(f"{ROOT}/home/.gemini/tmp/work/chats/session-1.jsonl", ROOT) is None
    writes = [apis.ToolCall("c1", "write_file", {"file_path": "GEMINI.md", "content": "x"}),
              apis.ToolCall("c2", "replace", {"file_path": f"{ROOT}/work/src/calc.py"}),
              apis.ToolCall("c3", "run_shell_command", {"command": "echo 6543 >> notes.txt"}),
              apis.ToolCall("c4", "write", {"filePath": f"{ROOT}/work/AGENTS.md"}),
              apis.ToolCall("c5", "edit", {"filePath": f"{ROOT}/work/README.md",
                                           "oldString": "a", "newString": "b"})]
    assert [(w.place, w.path) for call in writes for w in call_writes(call, ROOT)] == [
        ("agents_md", "GEMINI.md"), ("repository", f"{ROOT}/work/src/calc.py"),
        ("repository", "notes.txt"), ("agents_md", f"{ROOT}/work/AGENTS.md"),
        ("repository", f"{ROOT}/work/README.md")]
    shell = apis.ToolCall("c6", "run_shell_command", {"command": "amux memory show MEMORY.md"})
    assert [(c.op, c.via) for c in memory_calls(shell)] == [("get", "cli")]


def turn(index: int, **fields: object) -> Turn:
    made = Turn(index, "", exit_code=0, model_requests=1, answered_requests=1)
    for name, value in fields.items():
        setattr(made, name, value)
    return made


def test_precedence_and_agent_errors() -> None:
    scenario = BY_NAME["remember"]
    seed = dict(scenario.seed)
    wrote = {**seed, "a.md": "daily_yield, port 6543, refreshed at 08:00\n"}
    outcome = classify(scenario, [
        turn(0, store_before=seed, store_after=wrote,
             memory_calls=[MemoryCall("upsert", "mcp", "a.md", ok=True)],
             writes=[Write("agents_md", "work/AGENTS.md", "", "file")]),
        turn(1, store_before=wrote, store_after=wrote, answer="daily_yield and 6543",
             memory_calls=[MemoryCall("search", "mcp", query="daily_yield", ok=True)])])
    assert outcome.category == "fabricated" and set(outcome.flags) == {
        "fabricated", "wrong_place", "format"}  # a.md has no front matter: never the category
    crashed = classify(scenario, [turn(0, exit_code=1, answered_requests=0,
                                       failed_requests=["502 /v1/messages: refused"]),
                                  turn(1, timed_out=True)])
    assert crashed.category == "agent_error"
    assert crashed.flags["agent_error"][:2] == [
        "turn 1: the agent exited 1", "turn 1: no model answer (502 /v1/messages: refused)"]


# -- the note guide's flags, through the memory doctor ---------------------------------------

CI = f"{PROJECT}/ci.md"
NOTE = ("---\nname: staging-port\ndescription: the staging database's port\nmetadata:\n"
        "  type: project\n---\nThe staging database listens on port 6543.\n"
        "**Why:** the user asked to remember it.\n**How to apply:** staging connections.\n")


def saved(scenario: str, changes: dict[str, str | None]) -> list[Turn]:
    """One writing turn of `scenario` from its seed to the seed with `changes` (None: the
    document forgotten), and the recall turns answered right."""
    spec = BY_NAME[scenario]
    before = dict(spec.seed)
    after = {path: content for path, content in {**before, **changes}.items()
             if content is not None}
    turns = [turn(0, store_before=before, store_after=after,
                  memory_calls=[MemoryCall("upsert", "mcp", "a.md", ok=True)])]
    for index, later in enumerate(spec.turns[1:], 1):
        turns.append(turn(index, store_before=after, store_after=after,
                          answer=" ".join(later.answer_has),
                          memory_calls=[MemoryCall("search", "mcp", query="x", ok=True)]))
    return turns


def test_every_seed_follows_the_guide() -> None:
    """What the doctor finds after a session is then what the session wrote."""
    for scenario in SCENARIOS:
        assert doctor(scenario.seed) == [], scenario.name


def test_notes_not_in_the_guides_format() -> None:
    outcome = classify(BY_NAME["remember"], saved("remember", {
        "projects/widgets/staging.md": NOTE,
        f"{PROJECT}/yield.md": "The MES table daily_yield is the line 3 yield source.\n",
        "MEMORY.md": "# Memory\n\nLine 3 yield comes from daily_yield.\nStaging is on port "
                     "6543.\n"}))
    assert outcome.category == "correct"  # the facts were stored: the format is beside it
    assert [e.split(":")[0] for e in outcome.flags.pop("format")] == [
        "MEMORY.md", f"{PROJECT}/yield.md", "projects/widgets/"]
    assert outcome.flags == {}
    clean = classify(BY_NAME["remember"], saved("remember", {
        f"{PROJECT}/staging.md": NOTE,
        f"{PROJECT}/yield.md": NOTE.replace("staging-port", "line-3-yield").replace(
            "port 6543", "port 6543; line 3 yield: daily_yield"),
        "MEMORY.md": f"# Memory\n\n- [Staging]({PROJECT}/staging.md) — port\n"}))
    assert clean.flags == {} and clean.judged == (
        "format", "duplicate", "inverted", "fabricated", "wrong_place")


def test_a_document_beside_the_one_covering_the_fact_is_a_duplicate() -> None:
    now = CI.replace("ci.md", "ci-now.md")
    moved = BY_NAME["correct"].seed[CI].replace("CI runs on Jenkins (job widgets-main).",
                                                "CI runs on GitHub Actions (moved from Jenkins).")
    index = BY_NAME["correct"].seed["MEMORY.md"].replace("Jenkins", "GitHub Actions")
    beside = classify(BY_NAME["correct"], saved("correct", {
        now: moved.replace("name: ci", "name: ci-now"), CI: moved, "MEMORY.md": index}))
    assert beside.category == "correct"
    assert beside.flags == {"duplicate": [  # the doctor: on the later path, in path order
        f"{CI}: 100% the same text as {now}: likely one memory written twice, possibly "
        "contradicting itself; merge them and forget the other",
        f"{now}: created with GitHub Actions, Jenkins while {CI} covers the same fact "
        "(update it, never duplicate)"]}
    named = classify(BY_NAME["correct"], saved("correct", {
        now: "---\nname: ci\ndescription: CI\nmetadata:\n  type: reference\n---\n"
             "GitHub Actions.\n", "MEMORY.md": index}))
    assert named.category == "incomplete"  # ci.md still says Jenkins
    assert [e.split(":")[0] for e in named.flags["duplicate"]] == [now, now]
    assert "name 'ci' is used by 2 documents" in named.flags["duplicate"][0]
    # moved: the covering document forgotten, the fact in a new one
    renamed = classify(BY_NAME["correct"], saved("correct", {
        now: moved.replace("name: ci", "name: ci-now"), CI: None,
        "MEMORY.md": index.replace("ci.md", "ci-now.md")}))
    assert renamed.flags == {}


def test_a_relative_date_kept_where_the_user_gave_one() -> None:
    yesterday = dt.date.today() - dt.timedelta(days=1)

    def correction(when: str) -> dict[str, str | None]:
        seed = BY_NAME["correct"].seed
        return {CI: seed[CI].replace("CI runs on Jenkins (job widgets-main).",
                                     f"CI runs on GitHub Actions since {when} (moved from "
                                     "Jenkins)."),
                "MEMORY.md": seed["MEMORY.md"].replace("Jenkins", "GitHub Actions")}

    kept = classify(BY_NAME["correct"], saved("correct", correction("yesterday")))
    assert kept.category == "correct"
    assert kept.flags == {"relative_date": [
        f"{CI}: 'yesterday' will not say when once time has passed: write the absolute "
        "date (YYYY-MM-DD) it meant (the user said 'yesterday')"]}
    for absolute in (yesterday.isoformat(), f"{yesterday:%B} {yesterday.day}, {yesterday.year}"):
        outcome = classify(BY_NAME["correct"], saved("correct", correction(absolute)))
        assert outcome.flags == {}, absolute  # the date the user gave is no invention
        assert "relative_date" in outcome.judged
    # only judged where a prompt carried one
    remember = classify(BY_NAME["remember"], saved("remember", {
        f"{PROJECT}/staging.md": NOTE.replace("6543.", "6543 as of today; line 3 yield: "
                                              "daily_yield.")}))
    assert remember.flags == {} and "relative_date" not in remember.judged


def test_what_a_sample_is_judged_on() -> None:
    nothing = classify(BY_NAME["ordinary"], [turn(0, answer="42")])
    assert nothing.judged == ("inverted", "fabricated", "wrong_place")
    crashed = classify(BY_NAME["correct"], [turn(0, exit_code=1)])
    assert crashed.category == "agent_error" and crashed.judged == ()
