"""A newcomer's first run, end to end: install amux as the README does, ask `amux doctor`,
turn memory on, launch an agent against a model server with `--endpoint`, save a fact,
recall it in a new session, and resume the first through the command amux's closing line
printed.

A fresh virtual environment, a fresh home, no AMUX_* variable, the local default Hub it
starts on demand, the real pinned Codex; only the model is scripted (tests/mockmodel).
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

from tests.mockmodel import MockModel, Text, mcp
from tests.peers import agent_bins, node22_dir, npm_bin

ROOT = Path(__file__).resolve().parents[2]
FACT = "Indent with tabs.\n"
PATH = "preferences/editor.md"


def test_from_install_to_a_remembered_fact_and_a_resume(tmp_path: Path) -> None:
    npm_bin("codex")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    install = subprocess.run([str(venv / "bin" / "pip"), "install", "-q", str(ROOT)],
                             capture_output=True, text=True, timeout=600)
    assert install.returncode == 0, install.stderr[-3000:]
    home = tmp_path / "home"
    home.mkdir()
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("AMUX_", "XDG_", "OPENAI_", "CODEX_", "PYTHON"))}
    # The README's user has the Node.js every pinned agent needs (Pi 1.x: >= 22.19), or
    # `amux doctor` rightly calls Pi unable to start.
    env.update({"HOME": str(home), "PATH": os.pathsep.join(
        [str(venv / "bin"), *map(str, agent_bins()), str(node22_dir()), env["PATH"]])})
    work = tmp_path / "project"
    work.mkdir()

    def amux(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["amux", *args], env=env, cwd=work, capture_output=True,
                              text=True, timeout=300, stdin=subprocess.DEVNULL)

    try:
        first_look = amux("doctor", "--json")
        assert first_look.returncode == 1, first_look.stdout + first_look.stderr
        problems = json.loads(first_look.stdout)["findings"]
        fixes = [problem["fix"] for problem in problems if problem.get("fix")]
        assert fixes, problems
        for fix in fixes:  # each names a real command of this amux
            if fix.startswith("amux "):
                assert amux(*shlex.split(fix)[1:], "--help").returncode == 0, fix
        on = amux("system", "config", "set", "memory.enabled", "true")
        assert on.returncode == 0, on.stderr
        assert amux("doctor").returncode == 0

        with MockModel(
            [mcp("memory_upsert", {"path": PATH, "content": FACT,
                                   "expected_revision": "absent"}), Text("Saved.")],
            [mcp("memory_search", {"query": "tabs"}), Text("You indent with tabs.")],
            [Text("Still here.")],
        ) as model:
            endpoint = ["--endpoint", model.base_url, "--model", "local-model"]
            saved = amux("run", *endpoint, "codex", "--", "exec", "--skip-git-repo-check",
                         "Remember: I indent with tabs.")
            assert saved.returncode == 0, saved.stderr[-3000:]
            assert "Saved." in saved.stdout
            recalled = amux("run", *endpoint, "codex", "--", "exec", "--skip-git-repo-check",
                            "How do I indent?")
            assert "You indent with tabs." in recalled.stdout, recalled.stderr[-3000:]
            closing = saved.stderr.strip().splitlines()[-1]
            command = closing.partition("resume it with: ")[2]
            assert command.startswith("amux run --resume "), closing
            resumed = subprocess.run(
                [*shlex.split(command), "--", "exec", "--skip-git-repo-check", "Still there?"],
                env=env, cwd=work, capture_output=True, text=True, timeout=300,
                stdin=subprocess.DEVNULL)
            assert resumed.returncode == 0 and "Still here." in resumed.stdout, resumed.stderr
        searched = model.tool_results("memory_search")
        assert searched and PATH in searched[0].text
        third = [r for r in model.main() if r.conversation == 2]
        assert third and "Remember: I indent with tabs." in json.dumps(third[0].body)
        shown = amux("memory", "show", PATH)
        assert shown.returncode == 0 and "Indent with tabs." in shown.stdout
    finally:
        amux("hub", "stop")
