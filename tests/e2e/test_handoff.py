"""One memory for every agent: a fact saved through one real agent is recalled through each
of the others, every one launched with `amux run` at its defaults against the same
scripted model and the same Hub (the reason amux exists)."""

from __future__ import annotations

from pathlib import Path

from tests.e2e.story import amux_run, opencode_is_side, sessions
from tests.hubproc import HubProcess
from tests.mockmodel import MockModel, Recorded, Text, ToolCall, mcp
from tests.mockmodel.agents import (
    claude_env,
    cline_env,
    codex_env,
    copilot_env,
    gemini_env,
    kilo_env,
    opencode_env,
    pi_env,
    qwen_env,
    qwen_is_side,
)
from tests.peers import npm_bin

PATH = "projects/handoff/decisions.md"
FACT = "The release branch is cut on Thursdays.\n"


def side(request: Recorded) -> bool:
    """OpenCode's and Qwen Code's side requests (titles, memory extraction, classifiers)."""
    return opencode_is_side(request) or qwen_is_side(request)


def test_a_fact_saved_by_gemini_is_recalled_by_every_other_agent(
        memory_hub: HubProcess, tmp_path: Path, package_cache: Path) -> None:
    search = {"query": "release branch"}
    with MockModel(
        [mcp("memory_upsert", {"path": PATH, "content": FACT, "expected_revision": "absent"}),
         Text("Saved.")],                                                    # Gemini CLI
        [mcp("memory_search", search), Text("Thursdays.")],                  # Claude Code
        [mcp("memory_search", search), Text("Thursdays.")],                  # Codex
        [ToolCall("amux_memory_search", search), Text("Thursdays.")],        # OpenCode
        [ToolCall("mcp__amux__memory_search", search), Text("Thursdays.")],  # Pi 1.x
        [ToolCall("amux-memory_search", search), Text("Thursdays.")],        # Copilot CLI
        [ToolCall("mcp__amux__memory_search", search), Text("Thursdays.")],  # Qwen Code
        [ToolCall("amux__memory_search", search), Text("Thursdays.")],       # Cline
        [ToolCall("amux_memory_search", search), Text("Thursdays.")],        # Kilo Code CLI
        is_side=side,
    ) as model:
        work = tmp_path / "work"
        launches = [
            (gemini_env(tmp_path / "gemini", model), "gemini", ["-p", "Remember: Thursdays."]),
            (claude_env(tmp_path / "claude", model), "claude",
             ["-p", "When is the release branch cut?", "--output-format", "json"]),
            (codex_env(tmp_path / "codex", model), "codex",
             ["exec", "--skip-git-repo-check", "When is the release branch cut?"]),
            (opencode_env(tmp_path / "opencode", model), "opencode",
             ["run", "When is the release branch cut?"]),
            (pi_env(tmp_path / "pi", model), "pi",
             ["-p", "--model", "mock/mock-model", "When is the release branch cut?"]),
            (copilot_env(tmp_path / "copilot", model, package_cache), "copilot",
             ["-p", "When is the release branch cut?"]),
            (qwen_env(tmp_path / "qwen", model), "qwen",
             ["-p", "When is the release branch cut?"]),
            (cline_env(tmp_path / "cline", model), "cline", ["When is the release branch cut?"]),
            (kilo_env(tmp_path / "kilo", model), "kilo",
             ["run", "When is the release branch cut?"]),
        ]
        for env, agent, args in launches:
            amux_run(memory_hub, env, work, str(npm_bin(agent)), "--", *args)
    [saved] = model.tool_results("memory_upsert")
    assert not saved.is_error, saved.text
    status, stored = memory_hub.call("/v1/memory/get", {"path": PATH})
    assert status == 200 and stored["content"] == FACT
    recalled = {"claude and codex": model.tool_results("memory_search"),
                "opencode and kilo": model.tool_results("amux_memory_search"),
                "copilot": model.tool_results("amux-memory_search"),
                "pi and qwen": model.tool_results("mcp__amux__memory_search"),
                "cline": model.tool_results("amux__memory_search")}
    assert [len(results) for results in recalled.values()] == [2, 2, 1, 2, 1]
    for agent, results in recalled.items():
        for result in results:
            assert not result.is_error and PATH in result.text, (agent, result.text)
            assert "Thursdays" in result.text, (agent, result.text)
    assert sorted(state["adapter"] for state in sessions(memory_hub)) == [
        "claude", "cline", "codex", "copilot", "gemini", "kilo", "opencode", "pi", "qwen"]
