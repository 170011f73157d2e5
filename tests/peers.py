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
