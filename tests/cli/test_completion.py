"""`amux completion bash|zsh|fish`: the script the user installs completes the real
commands, `amux memory` commands, `amux run` options and the agents, driven in the shells
themselves (bash as its completion calls it; zsh and fish when installed here)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from amux.adapters import ADAPTERS
from amux.client.cli import COMMANDS
from tests.cli.script import console

pytestmark = pytest.mark.timeout(120)

CASES = [
    ("amux r", {"run"}),
    ("amux s", {"sessions", "settings", "system"}),
    ("amux run --dry-run c", {"claude", "cline", "codex", "copilot"}),
    ("amux run --no-m", {"--no-memory"}),
    ("amux run --endpoint-api a", {"anthropic"}),
    ("amux run --resume l", {"last"}),
    ("amux memory s", {"search", "show", "sync"}),
    ("amux memory upsert notes.md --exp", {"--expected-revision"}),
    ("amux system config g", {"get"}),
    ("amux settings set agents.pi.m", {"agents.pi.memory", "agents.pi.model"}),
    ("amux completion f", {"fish"}),
]
"""A command line typed so far (its last word being completed) and what it completes to."""


def script(tmp_path: Path, shell: str) -> Path:
    done = console(tmp_path / "amux", "completion", shell)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("# amux ") and f"amux completion {shell}" in done.stdout
    path = tmp_path / f"amux.{shell}"
    path.write_text(done.stdout)
    return path


def bash_completions(path: Path, line: str) -> set[str]:
    """What bash completes the last word of `line` to, through the script's function as
    `complete -F` calls it (COMP_WORDS, COMP_CWORD; COMPREPLY back)."""
    words = line.split(" ")
    program = (f"source {path}\nCOMP_WORDS=({' '.join(repr(w) for w in words)})\n"
               f"COMP_CWORD={len(words) - 1}\n_amux\nprintf '%s\\n' \"${{COMPREPLY[@]}}\"\n"
               "complete -p amux\n")
    done = subprocess.run(["bash", "--norc", "-c", program], capture_output=True, text=True,
                          timeout=30)
    assert done.returncode == 0, done.stderr
    *found, registered = done.stdout.splitlines()
    assert registered == "complete -o default -F _amux amux"
    return set(found) - {""}


@pytest.mark.parametrize(("line", "expected"), CASES)
def test_bash_completes_commands_options_and_agents(tmp_path: Path, line: str,
                                                    expected: set[str]) -> None:
    assert bash_completions(script(tmp_path, "bash"), line) == expected


def test_the_script_is_made_from_the_command_tables(tmp_path: Path) -> None:
    """Every agent of the registry and every `amux memory` command, nothing after `--`
    (the agent's own arguments)."""
    path = script(tmp_path, "bash")
    assert bash_completions(path, "amux run ") >= set(ADAPTERS) | {"--no-memory", "--endpoint"}
    assert bash_completions(path, "amux memory ") == set(COMMANDS) | {"--pretty"}
    assert bash_completions(path, "amux ") >= {"memory", "run", "completion", "settings"}
    assert bash_completions(path, "amux run claude -- --re") == set()


@pytest.mark.skipif(shutil.which("zsh") is None, reason="zsh is not installed")
def test_zsh_gets_the_same_words(tmp_path: Path) -> None:
    """Through zsh's bashcompinit, which then filters by what was typed."""
    path = script(tmp_path, "zsh")
    for line, expected in CASES:
        words = line.split(" ")
        program = (f"source {path}\nCOMP_WORDS=({' '.join(repr(w) for w in words)})\n"
                   f"COMP_CWORD={len(words) - 1}\ncompgen -F _amux -- {words[-1]!r}\n")
        done = subprocess.run(["zsh", "-f", "-c", program], capture_output=True, text=True,
                              timeout=30, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        offered = {word for word in done.stdout.split() if word.startswith(words[-1])}
        assert offered == expected, line


@pytest.mark.skipif(shutil.which("fish") is None, reason="fish is not installed")
def test_fish_completes_the_same(tmp_path: Path) -> None:
    path = script(tmp_path, "fish")
    for line, expected in CASES:
        done = subprocess.run(["fish", "--no-config", "-c",
                               f"source {path}; complete -C {line!r}"],
                              capture_output=True, text=True, timeout=30, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert {entry.split("\t")[0] for entry in done.stdout.splitlines()} == expected, line
