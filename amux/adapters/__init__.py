"""Agent adapters, one module each behind `base.Adapter`: pure functions from a launch
request to a launch plan. `ADAPTERS` maps each agent's command name to its adapter,
importing an adapter's module only when it is asked for (a launch needs one);
`for_agent` picks one by the command's name, else the fallback."""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Iterator, Mapping

from amux.adapters.base import Adapter
from amux.adapters.fallback import FallbackAdapter

_CLASSES = {
    "claude": "ClaudeAdapter",
    "codex": "CodexAdapter",
    "copilot": "CopilotAdapter",
    "gemini": "GeminiAdapter",
    "opencode": "OpenCodeAdapter",
    "pi": "PiAdapter",
    "qwen": "QwenAdapter",
}
"""Command name → the class in `amux.adapters.<name>`."""


class _Adapters(Mapping[str, Adapter]):
    def __init__(self) -> None:
        self._made: dict[str, Adapter] = {}

    def __getitem__(self, name: str) -> Adapter:
        if name not in _CLASSES:
            raise KeyError(name)
        if name not in self._made:
            module = importlib.import_module(f"amux.adapters.{name}")
            self._made[name] = getattr(module, _CLASSES[name])()
        return self._made[name]

    def __iter__(self) -> Iterator[str]:
        return iter(_CLASSES)

    def __len__(self) -> int:
        return len(_CLASSES)

    def __contains__(self, name: object) -> bool:
        return name in _CLASSES


ADAPTERS: Mapping[str, Adapter] = _Adapters()


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
