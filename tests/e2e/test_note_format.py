"""What agents write (issue 36): the real Claude Code, launched by `amux run` against a
scripted model that follows what amux teaches (reads the note guide once before its first
save, searches for a covering document, writes one fact with the guide's front matter, an
absolute date and its MEMORY.md line), leaves a scope `amux memory doctor` finds clean.
Only the model is scripted; the agent, the launcher, the MCP server and the Hub are real."""

from __future__ import annotations

from pathlib import Path

from amux.protocol.render import GUIDE_PATH, guide, render
from tests.e2e.story import amux_run
from tests.hubproc import HubProcess, amux
from tests.mockmodel import MockModel, Text, mcp
from tests.mockmodel.agents import claude_env
from tests.peers import npm_bin

NOTE_PATH = "projects/github.com-acme-shop/payments-tests.md"
NOTE = """---
name: payments-tests-serial
description: The payments test suite must run serially; it shares one sandbox account
metadata:
  type: feedback
---
Run the payments tests with `pytest tests/payments -n 0` (decided 2026-12-04).
**Why:** the tests share one sandbox account, so parallel runs collide.
**How to apply:** any run of tests/payments, locally and in CI.
"""
INDEX = f"- [Payments tests run serially]({NOTE_PATH}) — one sandbox account\n"


def test_a_save_that_follows_the_guide_leaves_the_doctor_clean(memory_hub: HubProcess,
                                                               tmp_path: Path) -> None:
    claude = npm_bin("claude")
    script = [
        mcp("memory_get", {"path": GUIDE_PATH}),
        mcp("memory_search", {"query": "payments serial"}),
        mcp("memory_get", {"path": "MEMORY.md"}),
        mcp("memory_upsert", {"path": NOTE_PATH, "content": NOTE,
                              "expected_revision": "absent"}),
        mcp("memory_upsert", {"path": "MEMORY.md", "content": INDEX,
                              "expected_revision": "absent"}),
        Text("Saved."),
    ]
    with MockModel(script) as model:
        env = claude_env(tmp_path, model)
        amux_run(memory_hub, env, tmp_path / "work", str(claude), "--", "-p",
                 "Remember: the payments tests must run serially, we decided that yesterday "
                 "(they share one sandbox account).", "--output-format", "json")
    first = model.main()[0]
    assert render("mcp") in first.instructions  # the protocol pointing to the guide
    upsert = next(tool for tool in first.tools if "memory_upsert" in str(tool))
    assert "front matter name, description, metadata.type" in str(upsert)  # says how
    results = model.tool_results("memory_get")
    assert guide().decode()[:200] in results[0].text  # the agent read the guide itself
    assert all("revision" in result.text for result in model.tool_results("memory_upsert"))
    code, report, err = amux(memory_hub.home, "memory", "doctor", "--json")
    assert code == 0, err
    assert report["documents"] == 2
    assert report["findings"] == [], report["findings"]
    _, stored = memory_hub.call("/v1/memory/get", {"path": NOTE_PATH})
    assert stored["content"] == NOTE
