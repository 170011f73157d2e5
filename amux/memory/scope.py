"""Scopes: which directory of the memory root a caller's documents live in (SPEC §2, §4).

The scope is derived by one function, `resolve_scope`, from the authenticated
identity (produced by the Hub's authentication, never by the caller) and the
isolation policy. No caller-chosen string ever names a directory:

    isolation off              -> global/                      binding "global"
    isolation on, principal p  -> users/<sha256 hex of p>/     binding "principal:<hex>"
    isolation on, no principal -> refused (never falls back to global)
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from amux.errors import Unauthenticated

PRINCIPAL_ID = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")


@dataclass(frozen=True)
class Identity:
    """Who is calling, as the Hub authenticated it: a principal id, or none."""

    principal_id: str | None = None

    def __post_init__(self) -> None:
        if self.principal_id is not None and not PRINCIPAL_ID.fullmatch(self.principal_id):
            raise ValueError(f"not a principal id: {self.principal_id!r}")


@dataclass(frozen=True)
class Scope:
    """A resolved scope: its binding string and its directory under the memory root."""

    binding: str
    directory: tuple[str, ...]


GLOBAL = Scope(binding="global", directory=("global",))


def principal_digest(principal_id: str) -> str:
    """Lowercase hex SHA-256 of a principal id: its directory name and binding suffix."""
    return hashlib.sha256(principal_id.encode("utf-8")).hexdigest()


def resolve_scope(identity: Identity, *, isolation: bool) -> Scope:
    """The scope `identity` may use under the isolation policy; refuses a missing identity."""
    if not isolation:
        return GLOBAL
    if identity.principal_id is None:
        raise Unauthenticated(
            "memory isolation is on and the caller has no authenticated principal; "
            "nothing falls back to the global scope"
        )
    digest = principal_digest(identity.principal_id)
    return Scope(binding=f"principal:{digest}", directory=("users", digest))
