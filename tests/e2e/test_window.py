"""`amux run --endpoint` with the real agents against a server whose window is Ollama's
default 4,096 tokens (seed 004 §4.5.0): every agent whose first request does not fit is
refused before it starts, in one line naming the numbers and the fix; Pi's (about 1,800
tokens with memory) fits and runs; a larger window runs Claude Code.

The stand-ins: a fake Ollama (tests/mockmodel/ollama.py) for the agents that speak an
OpenAI or Anthropic API, and for Gemini CLI a Gemini API whose model entry says
`inputTokenLimit: 4096` (Ollama speaks no Gemini API).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from amux.adapters import ADAPTERS
from amux.launcher import window
from tests.hubproc import HubProcess
from tests.mockmodel import MockModel, Text
from tests.mockmodel.firstrequest import headless_turn
from tests.mockmodel.ollama import FakeOllama
from tests.peers import npm_bin

pytestmark = pytest.mark.usefixtures("no_user_keys")
MODEL = "mock-model"


def stand_in(agent: str, window: int) -> MockModel:
    if agent == "gemini":
        return MockModel([Text("ok")], routes={f"/v1beta/models/{MODEL}": {
            "name": f"models/{MODEL}", "inputTokenLimit": window, "outputTokenLimit": 8192}})
    return FakeOllama([Text("ok")], model=MODEL, loaded=window)


@pytest.mark.timeout(300)
@pytest.mark.parametrize("agent", sorted(ADAPTERS))
def test_a_4096_token_window_refuses_every_agent_it_cannot_hold(
        memory_hub: HubProcess, tmp_path: Path, package_cache: Path, agent: str) -> None:
    known = ADAPTERS[agent].first_request
    assert known is not None
    extra = {"COPILOT_PKG_CACHE_HOME": str(package_cache)} if agent == "copilot" else None
    with stand_in(agent, 4096) as server:
        done = headless_turn(agent, npm_bin(agent), memory_hub.home, tmp_path, server, extra)
    if known.memory.tokens <= 4096:  # Pi
        assert done.returncode == 0, done.stderr
        assert server.main(), "the agent reached its model"
        assert "window" not in done.stderr
        return
    assert done.returncode == 2, done.stderr
    [line] = done.stderr.splitlines()
    assert line.startswith("amux run: invalid_argument: --endpoint ")
    source = (f"GET …/v1beta/models/{MODEL} inputTokenLimit" if agent == "gemini"
              else "Ollama /api/ps context_length (loaded)")
    assert (f"with a context window of 4,096 tokens ({source}), smaller than the first "
            f"request {agent} sends, about {known.memory.tokens:,} tokens") in line
    needed = window.suggested_window(known.memory.tokens)
    fix = ("serve the model with a larger context window" if agent == "gemini"
           else f"OLLAMA_CONTEXT_LENGTH={needed} ollama serve")
    assert fix in line
    assert server.main() == [], "nothing reached the model"
    assert not (memory_hub.home / "sessions").exists() or not any(
        (memory_hub.home / "sessions").iterdir())


@pytest.mark.timeout(300)
def test_a_window_that_holds_the_request_runs_the_agent(memory_hub: HubProcess,
                                                        tmp_path: Path) -> None:
    with stand_in("claude", 65536) as server:
        done = headless_turn("claude", npm_bin("claude"), memory_hub.home, tmp_path, server)
    assert done.returncode == 0, done.stderr
    assert "window" not in done.stderr
    assert server.main()
