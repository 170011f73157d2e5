"""docs/runtimes.md's example runs as written: the pinned Codex against the mock model, a real Hub.

The block is taken from the document and run unchanged as a script; only its surroundings
are the test's: `CODEX` names the pinned CLI, CODEX_HOME holds a config whose only provider
is the mock and which turns Codex's memories on (so the example must turn them off), AMUX_HOME
is the test Hub's.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from amux.protocol.render import render
from tests.hubproc import HubProcess
from tests.mockmodel import MockModel, Text, mcp
from tests.mockmodel.agents import REPO, codex_env
from tests.peers import npm_bin

DOC = REPO / "docs" / "runtimes.md"
DECISIONS = "# Decisions\nThe build uses pytest, run from the repository root.\n"
MEMORIES_ON = """
[features]
memories = true

[memories]
use_memories = true
generate_memories = true
"""


def example() -> str:
    found = re.search(r"<!-- runtime-example -->\s*```python\n(.+?)\n```", DOC.read_text(),
                      re.DOTALL)
    assert found, f"{DOC} has no python block under <!-- runtime-example -->"
    return found.group(1)


def test_the_example_answers_with_memory_and_native_memory_off(
    tmp_path: Path, memory_hub: HubProcess
) -> None:
    codex = npm_bin("codex")
    status, _ = memory_hub.call("/v1/memory/upsert", {
        "path": "projects/demo/decisions.md", "content": DECISIONS,
        "expected_revision": "absent"})
    assert status == 200
    script = tmp_path / "example.py"
    script.write_text(example())
    work = tmp_path / "work"
    work.mkdir()
    with MockModel([mcp("memory_search", {"query": "build"}),
                    Text("We run pytest from the repository root.")]) as model:
        env = {**codex_env(tmp_path, model, MEMORIES_ON), "CODEX": str(codex),
               "AMUX_HOME": str(memory_hub.home)}
        done = subprocess.run([sys.executable, str(script)], env=env, cwd=work,
                              stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "We run pytest from the repository root.\n"
    first, second = model.main()
    assert first.instruction_parts[1] == render("mcp")
    [result] = model.tool_results("memory_search")
    assert not result.is_error and result.request == second.index
    assert "projects/demo/decisions.md" in result.text
    assert not model.side()  # no memory_consolidation request: native memory stayed off
    assert "memories = true" in (tmp_path / "codex" / "config.toml").read_text()
