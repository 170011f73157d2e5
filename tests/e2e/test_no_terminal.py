"""`amux run AGENT` from a script: no terminal and no prompt, as a user's shell runs it (the
installed `amux`, a fresh home, no AMUX_* variable), each real agent pointed at the scripted
model so that the missing prompt is all that is wrong.

Four of the seven agents got no useful word: OpenCode drew its full-screen UI into the
pipe and waited for good, Pi exited 0 with no output, Qwen Code and Gemini CLI got a hint
about their model. Each is now told its non-interactive form (the adapter's
`prompt_args`); OpenCode is refused before it starts.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from amux.adapters import ADAPTERS
from amux.adapters.base import no_terminal, prompt_example
from tests.e2e.story import UserShell
from tests.mockmodel import MockModel, Text
from tests.peers import npm_bin, peer_env

SANDBOX_ARGS = {"gemini": ["--skip-trust"]}
"""What the work directory needs, not the prompt: Gemini CLI trusts no fresh folder."""


@pytest.mark.timeout(300)
@pytest.mark.parametrize("agent", sorted(ADAPTERS))
def test_an_agent_with_no_terminal_and_no_prompt_is_told_its_prompt_form(
        tmp_path: Path, package_cache: Path, agent: str) -> None:
    npm_bin(agent)
    adapter = ADAPTERS[agent]
    shell = UserShell(tmp_path, COPILOT_PKG_CACHE_HOME=str(package_cache),
                      npm_config_offline="true")  # sandbox: Copilot's cache, OpenCode offline
    shell.env = peer_env(agent, shell.env)  # Pi 1.x: Node 22
    try:
        with MockModel([Text("Hi.")]) as model:
            url = model.url + next(iter(adapter.endpoint_paths.values()))
            started = time.monotonic()
            done = shell.amux("run", "--endpoint", url, "--model", "mock-model", agent, "--",
                              *SANDBOX_ARGS.get(agent, []), timeout=120)
            seconds = time.monotonic() - started
    finally:
        shell.close()
    example = prompt_example(adapter)
    assert not model.main(), "no prompt reached the model"
    if agent in ("opencode", "kilo"):  # it would draw into the pipe and wait: refused at once
        assert done.returncode == 2 and seconds < 20
        assert done.stderr == (
            f"amux run: invalid_argument: {adapter.display_name} draws its interactive UI on "
            "the terminal, "
            "and stdin and stdout are not one here: it would draw into the pipe and wait for "
            f"good; run it in a terminal, or give it a prompt: {example}\n")
        assert model.requests == []  # refused before anything was asked
        return
    last = done.stderr.splitlines()[-1]
    if agent == "pi":  # it ends with status 0 and no output
        assert done.returncode == 0
        assert last == f"amux run: pi exited 0 without running a prompt: {no_terminal(adapter)}"
        return
    assert done.returncode != 0
    assert last.startswith(f"amux run: {agent} failed") and last.endswith(
        f": {no_terminal(adapter)}"), done.stderr[-2000:]
    assert f"give it a prompt: {example}" in last
