"""Where the real peers live (npm packages pinned in fixtures/npm) and what to do without them.

Outside CI a missing peer skips its test with the command that installs it; in CI
(`CI=true`) it fails, so a broken install can never pass as green.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

NPM_PREFIX = Path(__file__).resolve().parents[1] / "fixtures" / "npm"


def missing(what: str) -> None:
    """Fail in CI, skip elsewhere, naming how to install `what`."""
    message = f"{what} is not installed: run `npm ci --prefix {NPM_PREFIX}`"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(message)
    pytest.skip(message)


def npm_bin(name: str) -> Path:
    """An executable from fixtures/npm/node_modules/.bin."""
    path = NPM_PREFIX / "node_modules" / ".bin" / name
    if not path.exists():
        missing(name)
    return path
