"""Each adapter's recorded first request (`Adapter.first_request`, what `amux run --endpoint`
compares with the model's context window) is still what the pinned agent really sends.

The real agent CLI runs one headless turn through `amux run --endpoint` against the mock
model, with memory on the Hub and then off (tests/mockmodel/firstrequest.py); the first
request that offers tools is measured as eval measures it. A measure more than 25 % away
from the recorded one, either way, fails: grown, the check would let a window cut the
prompt; shrunk, it would refuse windows that hold it. So does a recorded version that is
not the pinned one (fixtures/npm/package.json). The fix is to record the new numbers in the
adapter and in docs/agent-findings.md.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from amux.adapters import ADAPTERS
from amux.adapters.base import RequestSize
from tests.hubproc import HubProcess
from tests.launcher.fakeagents import enable
from tests.mockmodel.firstrequest import Measured, measure
from tests.peers import NPM_PREFIX, npm_bin

pytestmark = pytest.mark.usefixtures("no_user_keys")
TOLERANCE = 0.25


def drift(agent: str, memory: bool, measured: Measured, recorded: RequestSize) -> str | None:
    tokens = measured.size.estimated_tokens
    if recorded.tokens * (1 - TOLERANCE) <= tokens <= recorded.tokens * (1 + TOLERANCE):
        return None
    with_ = "with" if memory else "without"
    return (f"{agent}'s first request {with_} memory is about {tokens:,} tokens "
            f"({measured.size.content_chars:,} characters, {measured.size.tools} tools, "
            f"{measured.body_bytes:,} body bytes); its adapter records {recorded.tokens:,} "
            f"({recorded.chars:,} characters): record the new measure in the adapter and in "
            "docs/agent-findings.md")


@pytest.mark.timeout(600)
@pytest.mark.parametrize("agent", sorted(ADAPTERS))
def test_the_recorded_first_request_is_what_the_pinned_agent_sends(
        hub: HubProcess, tmp_path: Path, package_cache: Path, agent: str) -> None:
    adapter = ADAPTERS[agent]
    known = adapter.first_request
    assert known is not None and adapter.package is not None
    pinned = json.loads((NPM_PREFIX / "package.json").read_text())["dependencies"]
    assert known.version == pinned[adapter.package], (
        f"{agent}'s first request was measured at {known.version}, the pinned agent is "
        f"{pinned[adapter.package]}: measure it again")
    for size in (known.memory, known.plain):
        assert size.tokens == math.ceil(size.chars / 4)
    binary = npm_bin(agent)
    extra = {"COPILOT_PKG_CACHE_HOME": str(package_cache)} if agent == "copilot" else None
    plain = measure(agent, binary, hub.home, tmp_path / "plain", extra)
    enable(hub)
    with_memory = measure(agent, binary, hub.home, tmp_path / "memory", extra)
    assert "memory is off" in plain.stderr and "memory is off" not in with_memory.stderr
    problems = [problem for problem in (drift(agent, False, plain, known.plain),
                                        drift(agent, True, with_memory, known.memory))
                if problem]
    assert problems == []
