"""The classification rules on plain evidence: each fires on its case and not on its
near miss (the end-to-end tests in test_live.py drive the same rules through real agents)."""

from __future__ import annotations

from pathlib import Path

import pytest

from amux.eval import model_apis as apis
from amux.eval.classify import (
    classify,
    corpus,
    explain_offers,
    fabrications,
    negated,
    role_clauses,
    stale_lines,
)
from amux.eval.evidence import MemoryCall, Turn, Write, call_writes, memory_calls, place_of
from amux.eval.scenarios import BY_NAME

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
    assert outcome.category == "fabricated" and set(outcome.flags) == {"fabricated",
                                                                        "wrong_place"}
    crashed = classify(scenario, [turn(0, exit_code=1, answered_requests=0,
                                       failed_requests=["502 /v1/messages: refused"]),
                                  turn(1, timed_out=True)])
    assert crashed.category == "agent_error"
    assert crashed.flags["agent_error"][:2] == [
        "turn 1: the agent exited 1", "turn 1: no model answer (502 /v1/messages: refused)"]
