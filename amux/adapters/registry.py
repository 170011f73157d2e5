"""`ADAPTERS`: each agent's command name → its adapter, made when first asked for.

One factory per agent imports its adapter's module when called, so a launch imports only
the adapter it needs; each is typed `-> Adapter`, so `mypy --strict` proves every adapter
class satisfies `base.Adapter`. Adding an agent: its module and its factory here."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

from amux.adapters.base import Adapter


def _claude() -> Adapter:
    from amux.adapters.claude import ClaudeAdapter

    return ClaudeAdapter()


def _cline() -> Adapter:
    from amux.adapters.cline import ClineAdapter

    return ClineAdapter()


def _codex() -> Adapter:
    from amux.adapters.codex import CodexAdapter

    return CodexAdapter()


def _copilot() -> Adapter:
    from amux.adapters.copilot import CopilotAdapter

    return CopilotAdapter()


def _gemini() -> Adapter:
    from amux.adapters.gemini import GeminiAdapter

    return GeminiAdapter()


def _kilo() -> Adapter:
    from amux.adapters.kilo import KiloAdapter

    return KiloAdapter()


def _opencode() -> Adapter:
    from amux.adapters.opencode import OpenCodeAdapter

    return OpenCodeAdapter()


def _pi() -> Adapter:
    from amux.adapters.pi import PiAdapter

    return PiAdapter()


def _qwen() -> Adapter:
    from amux.adapters.qwen import QwenAdapter

    return QwenAdapter()


_FACTORIES: Mapping[str, Callable[[], Adapter]] = {
    "claude": _claude,
    "cline": _cline,
    "codex": _codex,
    "copilot": _copilot,
    "gemini": _gemini,
    "kilo": _kilo,
    "opencode": _opencode,
    "pi": _pi,
    "qwen": _qwen,
}
"""Command name → the factory of its adapter, in the order help texts list them."""


class _Adapters(Mapping[str, Adapter]):
    def __init__(self) -> None:
        self._made: dict[str, Adapter] = {}

    def __getitem__(self, name: str) -> Adapter:
        if name not in self._made:
            self._made[name] = _FACTORIES[name]()
        return self._made[name]

    def __iter__(self) -> Iterator[str]:
        return iter(_FACTORIES)

    def __len__(self) -> int:
        return len(_FACTORIES)

    def __contains__(self, name: object) -> bool:
        return name in _FACTORIES


ADAPTERS: Mapping[str, Adapter] = _Adapters()
