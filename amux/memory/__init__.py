"""The memory store the Hub owns: plain UTF-8 Markdown files under a memory root, and
their history (one git repository per scope, outside the root: `history`).

Knows no socket, identity store or agent. Start at `store.Store`; scopes come from
`scope.resolve_scope`; every failure is an `amux.errors.AmuxError` with a stable code.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from amux.memory.scope import GLOBAL, Identity, Scope, resolve_scope
    from amux.memory.store import Store

__all__ = ["GLOBAL", "Identity", "Scope", "Store", "resolve_scope"]

_HOMES = {"GLOBAL": "scope", "Identity": "scope", "Scope": "scope",
          "resolve_scope": "scope", "Store": "store"}


def __getattr__(name: str) -> Any:
    """Import on first use: the launcher needs `durable` and `errors`, not the whole store."""
    if name not in _HOMES:
        raise AttributeError(f"module 'amux.memory' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f"amux.memory.{_HOMES[name]}"), name)
