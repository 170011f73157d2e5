"""Agent adapters, one module each behind `base.Adapter`: pure functions from a launch
request to a launch plan. `ADAPTERS` (`registry`) maps each agent's command name to its
adapter, importing an adapter's module only when it is asked for (a launch needs one);
`for_agent` picks one by the command's name, else the fallback."""

from __future__ import annotations

import os
from collections.abc import Callable

from amux.adapters.base import Adapter
from amux.adapters.fallback import FallbackAdapter
from amux.adapters.registry import ADAPTERS

__all__ = ["ADAPTERS", "for_agent", "grouped"]


def for_agent(command: str) -> Adapter:
    """The adapter for `command` (a name on PATH or a path), else the fallback."""
    return ADAPTERS.get(os.path.basename(command), FallbackAdapter())


def grouped(key: Callable[[Adapter], str]) -> dict[str, list[str]]:
    """The registry's agent names by `key` of their adapters, groups and names in registry
    order (for help texts: "OPENAI_API_KEY for codex, opencode, pi and qwen")."""
    groups: dict[str, list[str]] = {}
    for name, adapter in ADAPTERS.items():
        groups.setdefault(key(adapter), []).append(name)
    return groups
