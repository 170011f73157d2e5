"""Agent adapters, one module each behind `base.Adapter`: pure functions from a launch
request to a launch plan. `for_agent` picks one by the command's name."""

from __future__ import annotations

import os

from amux.adapters.base import Adapter
from amux.adapters.claude import ClaudeAdapter
from amux.adapters.codex import CodexAdapter
from amux.adapters.fallback import FallbackAdapter
from amux.adapters.pi import PiAdapter

ADAPTERS: dict[str, Adapter] = {
    adapter.name: adapter for adapter in (ClaudeAdapter(), CodexAdapter(), PiAdapter())
}


def for_agent(command: str) -> Adapter:
    """The adapter for `command` (a name on PATH or a path), else the fallback."""
    return ADAPTERS.get(os.path.basename(command), FallbackAdapter())
