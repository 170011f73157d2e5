"""Scope derivation (SPEC §2, §4): one function, never a caller-chosen string."""

from __future__ import annotations

import hashlib

import pytest

from amux.errors import Unauthenticated
from amux.memory.scope import GLOBAL, Identity, principal_digest, resolve_scope


def test_isolation_off_is_global_for_everyone() -> None:
    assert resolve_scope(Identity(None), isolation=False) is GLOBAL
    assert resolve_scope(Identity("alice"), isolation=False) is GLOBAL
    assert GLOBAL.directory == ("global",)
    assert GLOBAL.binding == "global"


def test_isolation_on_uses_the_principal_digest() -> None:
    digest = hashlib.sha256(b"alice").hexdigest()
    scope = resolve_scope(Identity("alice"), isolation=True)
    assert scope.directory == ("users", digest)
    assert scope.binding == f"principal:{digest}"
    assert principal_digest("alice") == digest
    assert resolve_scope(Identity("bob"), isolation=True) != scope


def test_isolation_on_without_identity_never_falls_back_to_global() -> None:
    with pytest.raises(Unauthenticated):
        resolve_scope(Identity(None), isolation=True)


@pytest.mark.parametrize("bad", ["", "Alice", "../x", "a/b", "-a", "a" * 65, "global", " a"])
def test_identity_refuses_what_is_not_a_principal_id(bad: str) -> None:
    if bad == "global":  # a valid id: its scope is still a digest, never the global dir
        assert resolve_scope(Identity(bad), isolation=True).directory[0] == "users"
        return
    with pytest.raises(ValueError):
        Identity(bad)


def test_longest_principal_id_is_accepted() -> None:
    assert Identity("a" * 64).principal_id == "a" * 64
