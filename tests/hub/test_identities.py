"""Identities (SPEC §4): principals, aliases, hashed tokens, delegation and bindings."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from amux.errors import (
    BindingMismatch,
    InvalidArgument,
    StorageUnavailable,
    Unauthenticated,
)
from amux.hub.identities import Registry, check_binding
from amux.memory.scope import GLOBAL, Identity, resolve_scope
from tests.hostile import fill, small_tmpfs


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def test_owner_is_created_once(tmp_path: Path) -> None:
    registry = Registry(tmp_path)
    issued = registry.ensure_owner("root")
    assert issued is not None and issued.principal == "root"
    assert registry.ensure_owner("root") is None
    assert Registry(tmp_path).owner == "root"
    assert registry.authenticate(issued.token).principal == "root"


def test_tokens_are_stored_only_as_digests(tmp_path: Path) -> None:
    registry = Registry(tmp_path)
    issued = registry.add("alice")
    text = registry.path.read_text()
    assert issued.token not in text
    assert issued.token[5:] not in text
    assert issued.token_id in text
    assert stat.S_IMODE(registry.path.stat().st_mode) == 0o600
    assert issued.token.startswith("amux_") and len(issued.token) == 48
    assert set(issued.to_wire()) == {"principal", "token", "token_id"}
    # A restarted Hub still knows the token.
    assert Registry(tmp_path).authenticate(issued.token).principal == "alice"


def test_aliases_resolve_to_one_principal(tmp_path: Path) -> None:
    registry = Registry(tmp_path)
    registry.add("alice")
    assert registry.alias("alice", "alice-chat") == "alice"
    assert registry.resolve("alice-chat") == "alice"
    by_alias = registry.issue_token("alice-chat")
    assert by_alias.principal == "alice"
    assert resolve_scope(Identity(by_alias.principal), isolation=True) == resolve_scope(
        Identity("alice"), isolation=True
    )
    with pytest.raises(InvalidArgument, match="already"):
        registry.add("alice-chat")
    with pytest.raises(InvalidArgument, match="already"):
        registry.alias("alice", "alice")


@pytest.mark.parametrize("name", ["", "Alice", "a/b", "-x", "a" * 65, "a b"])
def test_bad_names_are_refused(tmp_path: Path, name: str) -> None:
    with pytest.raises(InvalidArgument):
        Registry(tmp_path).add(name)


@pytest.mark.parametrize(
    "token", [None, "", "amux_short", "x" * 48, "amux_" + "!" * 43, "amux_" + "a" * 43]
)
def test_bad_or_unknown_tokens_are_unauthenticated(tmp_path: Path, token: object) -> None:
    registry = Registry(tmp_path)
    registry.add("alice")
    with pytest.raises(Unauthenticated):
        registry.authenticate(token)


def test_revoke_one_or_all(tmp_path: Path) -> None:
    registry = Registry(tmp_path)
    first = registry.add("alice")
    second = registry.issue_token("alice")
    other = registry.add("bob")
    assert registry.revoke("alice", first.token_id) == [first.token_id]
    with pytest.raises(Unauthenticated):
        registry.authenticate(first.token)
    assert registry.authenticate(second.token).principal == "alice"
    with pytest.raises(InvalidArgument):
        registry.revoke("alice", other.token_id)  # not alice's token
    assert registry.revoke("alice") == [second.token_id]
    with pytest.raises(Unauthenticated):
        Registry(tmp_path).authenticate(second.token)
    assert registry.authenticate(other.token).principal == "bob"


def test_delegated_tokens_carry_a_binding_and_expire(tmp_path: Path) -> None:
    clock = Clock()
    registry = Registry(tmp_path, clock=clock)
    registry.add("alice")
    alice_scope = resolve_scope(Identity("alice"), isolation=True)
    delegated = registry.delegate("alice", alice_scope.binding, ttl=60)
    credential = registry.authenticate(delegated.token)
    assert (credential.kind, credential.binding) == ("delegated", alice_scope.binding)
    clock.now += 59
    registry.authenticate(delegated.token)
    clock.now += 1
    with pytest.raises(Unauthenticated, match="expired"):
        registry.authenticate(delegated.token)
    listed = registry.listing()[0]["tokens"]
    assert [t["kind"] for t in listed] == ["login"]  # the expired token is gone
    for bad in ("principal:xyz", "users/abc", "", None):
        with pytest.raises(InvalidArgument):
            registry.delegate("alice", bad, ttl=60)  # type: ignore[arg-type]
    for ttl in (0, -1, True):
        with pytest.raises(InvalidArgument):
            registry.delegate("alice", "global", ttl=ttl)


def test_binding_mismatch_both_ways(tmp_path: Path) -> None:
    registry = Registry(tmp_path)
    registry.add("alice")
    alice_scope = resolve_scope(Identity("alice"), isolation=True)
    bound_global = registry.authenticate(registry.delegate("alice", "global", 60).token)
    bound_alice = registry.authenticate(registry.delegate("alice", alice_scope.binding, 60).token)
    check_binding(bound_global, GLOBAL)
    check_binding(bound_alice, alice_scope)
    with pytest.raises(BindingMismatch):
        check_binding(bound_global, alice_scope)  # isolation switched on since
    with pytest.raises(BindingMismatch):
        check_binding(bound_alice, GLOBAL)  # isolation switched off since
    login = registry.authenticate(registry.issue_token("alice").token)
    check_binding(login, GLOBAL)  # ordinary callers act in their current scope
    with pytest.raises(BindingMismatch):
        check_binding(login, GLOBAL, declared=alice_scope.binding)


def test_list_shows_no_secrets(tmp_path: Path) -> None:
    registry = Registry(tmp_path)
    registry.ensure_owner("root")
    issued = registry.add("alice")
    registry.alias("alice", "al")
    listing = registry.listing()
    assert [p["principal"] for p in listing] == ["alice", "root"]
    assert listing[0]["aliases"] == ["al"] and listing[1]["owner"] is True
    dumped = json.dumps(listing)
    assert issued.token not in dumped and "digest" not in dumped


@pytest.mark.parametrize(
    ("text", "message"),
    [("{not json", "cannot be read"), ("[]", "not an identities file"),
     ('{"version": 2}', "not an identities file")],
)
def test_a_corrupt_registry_is_reported(tmp_path: Path, text: str, message: str) -> None:
    (tmp_path / "identities.json").write_text(text)
    with pytest.raises(InvalidArgument, match=message):
        Registry(tmp_path)


def test_a_change_that_cannot_be_saved_changes_nothing(tmp_path: Path) -> None:
    """Durable before in force (SPEC §4), for every kind of change, on a real full disk."""
    with small_tmpfs(tmp_path / "m", size="1m") as mount:
        clock = Clock()
        registry = Registry(mount, clock=clock)
        owner = registry.ensure_owner("root")
        assert owner is not None
        alice = registry.add("alice")
        expiring = registry.delegate("alice", "global", ttl=60)
        clock.now += 61  # expired: pruned by the next change that is saved
        saved = registry.path.read_bytes()
        listed = registry.listing()
        filler = fill(mount)
        changes = [lambda: registry.add("bob"), lambda: registry.alias("alice", "al"),
                   lambda: registry.issue_token("alice"),
                   lambda: registry.delegate("alice", "global", ttl=60),
                   lambda: registry.revoke("alice", alice.token_id),
                   lambda: registry.revoke("alice")]
        for change in changes:
            with pytest.raises(StorageUnavailable) as refused:
                change()
            assert refused.value.errno_name == "ENOSPC"
            assert registry.listing() == listed
            assert registry.authenticate(alice.token).principal == "alice"
        assert registry.path.read_bytes() == saved
        assert not list(mount.glob(".amux-tmp-*"))
        filler.unlink()
        registry.revoke("alice", alice.token_id)
        assert expiring.token_id not in registry.path.read_text()  # pruned when saved
        reloaded = Registry(mount, clock=clock)
        with pytest.raises(Unauthenticated):
            reloaded.authenticate(alice.token)
        assert reloaded.authenticate(owner.token).principal == "root"


def test_the_owners_first_start_on_a_full_disk_creates_nothing(tmp_path: Path) -> None:
    with small_tmpfs(tmp_path / "m", size="1m") as mount:
        fill(mount)
        registry = Registry(mount)
        with pytest.raises(StorageUnavailable):
            registry.ensure_owner("root")
        assert registry.owner is None and not registry.path.exists()
