"""The README's set-up commands stay true: the main job runs, CI runs the test line."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _command(marker: str) -> str:
    readme = (ROOT / "README.md").read_text()
    found = re.search(rf"<!-- {marker} -->\s*```sh\n(.+?)\n```", readme)
    assert found, f"README.md has no command under <!-- {marker} -->"
    return found.group(1)


def test_readme_names_both_commands_and_ci_runs_the_test_line() -> None:
    main = _command("main-command")
    test = _command("test-command")
    assert main.endswith("python -m benchmarks")
    assert test.endswith("python -m pytest")
    assert "test-command" in (ROOT / ".ci" / "run").read_text()


def test_main_job_runs(tmp_path: Path) -> None:
    """`python -m benchmarks --quick`: the main job until the Hub exists (needs rg)."""
    report = tmp_path / "report.json"
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--quick", "--json", str(report),
         "--dir", str(tmp_path / "corpus")],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    data = json.loads(report.read_text())
    assert data["machine"]["rg"].startswith("ripgrep"), "rg (the floor) must be installed"
    assert data["corpus"]["documents"] == 1024
    assert data["corpus"]["total_bytes"] <= 8 * 1024 * 1024
