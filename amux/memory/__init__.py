"""The memory store the Hub owns: plain UTF-8 Markdown files under a memory root.

Knows no socket, identity store or agent. Start at `store.Store`; scopes come from
`scope.resolve_scope`; every failure is an `errors.AmuxError` with a stable code.
"""

from amux.memory.errors import AmuxError
from amux.memory.scope import GLOBAL, Identity, Scope, resolve_scope
from amux.memory.store import Store

__all__ = ["GLOBAL", "AmuxError", "Identity", "Scope", "Store", "resolve_scope"]
