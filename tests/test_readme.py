"""The README's set-up commands stay true: the main job launches an agent with memory, CI
runs the test line."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from tests.peers import npm_bin

ROOT = Path(__file__).resolve().parents[1]


def _command(marker: str) -> str:
    readme = (ROOT / "README.md").read_text()
    found = re.search(rf"<!-- {marker} -->\s*```sh\n(.+?)\n```", readme)
    assert found, f"README.md has no command under <!-- {marker} -->"
    return found.group(1)


def test_readme_names_both_commands_and_ci_runs_the_test_line() -> None:
    main = _command("main-command")
    test = _command("test-command")
    assert "npm ci --prefix fixtures/npm" in main and "npm ci --prefix fixtures/npm" in test
    assert main.endswith("amux run fixtures/npm/node_modules/.bin/claude")
    assert test.endswith("python -m pytest")
    assert "test-command" in (ROOT / ".ci" / "run").read_text()


def test_main_job_launches_a_memory_enabled_agent(tmp_path: Path) -> None:
    """The main command's last two steps, here with `--dry-run` (the real launch of each
    agent is tests/e2e): memory on starts the Hub on demand, and the plan wires memory."""
    claude = npm_bin("claude")
    steps = _command("main-command").split(" && ")
    assert steps[-2] == ".venv/bin/amux system config set memory.enabled true"
    env = {**os.environ, "AMUX_HOME": str(tmp_path / "home")}
    for name in ("AMUX_MEMORY_CONFIG", "AMUX_HUB", "AMUX_TOKEN"):
        env.pop(name, None)
    amux = [sys.executable, "-m", "amux"]
    try:
        on = subprocess.run([*amux, "system", "config", "set", "memory.enabled", "true"],
                            env=env, capture_output=True, text=True, timeout=60, cwd=ROOT)
        assert on.returncode == 0, on.stderr
        plan = subprocess.run([*amux, "run", "--dry-run", str(claude)], env=env,
                              capture_output=True, text=True, timeout=60, cwd=ROOT)
        assert plan.returncode == 0, plan.stderr
        launch = json.loads(plan.stdout)
        assert launch["channel"] == "mcp" and launch["binding"] == "global"
        assert launch["env"] == {"CLAUDE_CODE_DISABLE_AUTO_MEMORY": "1"}
        assert launch["files"][1].endswith("/run/agents/" + launch["session"] + "/memory.json")
    finally:
        subprocess.run([*amux, "hub", "stop"], env=env, capture_output=True, timeout=60)


def test_benchmark_command_runs(tmp_path: Path) -> None:
    """`python -m benchmarks --quick` (the README's benchmark command, few repetitions)."""
    report = tmp_path / "report.json"
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--quick", "--json", str(report),
         "--dir", str(tmp_path / "corpus")],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    data = json.loads(report.read_text())
    assert data["machine"]["rg"].startswith("ripgrep"), "rg (the floor) must be installed"
    assert data["corpus"]["documents"] == 1024
    assert {"hub", "mcp", "launch"} <= data.keys()
