"""The Hub request layer against a real store, registry and config on temp dirs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from amux.hub.api import HubApi, Request, Response
from amux.hub.config import ConfigFile
from amux.hub.identities import Registry
from amux.memory import Store
from amux.memory.scope import Identity, resolve_scope


class Hub:
    """A HubApi with an owner, alice and bob, memory on, and helpers to call it."""

    def __init__(self, home: Path) -> None:
        self.config = ConfigFile(home)
        self.config.set("memory.enabled", "true")
        self.registry = Registry(home)
        owner = self.registry.ensure_owner("owner")
        assert owner is not None
        self.owner = owner.token
        self.alice = self.registry.add("alice").token
        self.bob = self.registry.add("bob").token
        self.store = Store(home / "memory")
        self.api = HubApi(self.store, self.registry, self.config)

    def call(self, path: str, token: str | None, body: object = None, *,
             binding: str | None = None, owner_socket: bool = False) -> Response:
        raw = b"" if body is None else json.dumps(body).encode()
        return self.api.handle(Request("POST", path, raw, token, binding, owner_socket))

    def admin(self, path: str, body: dict[str, object]) -> Response:
        return self.call(path, self.owner, body, owner_socket=True)

    def isolate(self, on: bool) -> None:
        assert self.admin("/v1/admin/config", {
            "action": "set", "key": "isolation.enabled", "value": str(on).lower(),
        }).status == 200


@pytest.fixture
def hub(tmp_path: Path) -> Hub:
    return Hub(tmp_path)


def _code(response: Response) -> str:
    return str(response.json()["error"]["code"])


def test_crud_round_trip(hub: Hub) -> None:
    entry = {"path": "MEMORY.md", "content": "prefer pytest\n", "expected_revision": "absent"}
    put = hub.call("/v1/memory/upsert", hub.alice, entry)
    assert put.status == 200 and put.json()["created"] is True
    got = hub.call("/v1/memory/get", hub.alice, {"path": "MEMORY.md"}).json()
    assert got["content"] == "prefer pytest\n"
    found = hub.call("/v1/memory/search", hub.bob, {"query": "pytest"}).json()
    assert [r["path"] for r in found["results"]] == ["MEMORY.md"]  # isolation off: shared
    gone = hub.call("/v1/memory/forget", hub.alice,
                    {"path": "MEMORY.md", "expected_revision": got["revision"]})
    assert gone.json() == {"path": "MEMORY.md", "deleted": True}


def test_errors_carry_appendix_codes_and_statuses(hub: Hub) -> None:
    cases = [
        (hub.call("/v1/memory/get", None, {"path": "a.md"}), 401, "unauthenticated"),
        (hub.call("/v1/memory/get", "amux_" + "x" * 43, {"path": "a.md"}), 401,
         "unauthenticated"),
        (hub.call("/v1/memory/get", hub.alice, {"path": "../a.md"}), 400, "invalid_path"),
        (hub.call("/v1/memory/get", hub.alice, {}), 400, "invalid_argument"),
        (hub.call("/v1/memory/get", hub.alice, {"path": "a.md", "section": "x"}), 400,
         "invalid_argument"),
        (hub.call("/v1/memory/nope", hub.alice, {}), 400, "invalid_argument"),
        (hub.call("/v1/memory/upsert", hub.alice,
                  {"path": "a.md", "content": "x", "expected_revision": "f" * 64}), 409,
         "revision_conflict"),
        (hub.call("/v1/memory/upsert", hub.alice,
                  {"path": "a.md", "content": "x" * 70_000, "expected_revision": "absent"}), 413,
         "quota_exceeded"),
    ]
    for response, status, code in cases:
        assert (response.status, _code(response)) == (status, code)
    raw = hub.api.handle(Request("POST", "/v1/memory/get", b"{not json", hub.alice))
    assert (raw.status, _code(raw)) == (400, "invalid_argument")
    wrong_method = hub.api.handle(Request("GET", "/v1/memory/get", b"", hub.alice))
    assert wrong_method.status == 400


def test_isolation_matrix(hub: Hub) -> None:
    hub.isolate(True)
    hub.registry.alias("alice", "alice-chat")
    alias_token = hub.registry.issue_token("alice-chat").token
    put = hub.call("/v1/memory/upsert", hub.alice,
                   {"path": "notes/a.md", "content": "alice only", "expected_revision": "absent"})
    assert put.status == 200
    for body in ({"path": "notes/a.md"}, {"path": "notes//a.md"}, {"path": "./notes/a.md"}):
        response = hub.call("/v1/memory/get", hub.bob, body)
        assert response.status == 400 or response.json()["exists"] is False
    assert hub.call("/v1/memory/search", hub.bob, {"query": "alice"}).json()["results"] == []
    forget = hub.call("/v1/memory/forget", hub.bob,
                      {"path": "notes/a.md", "expected_revision": put.json()["revision"]})
    assert forget.json() == {"path": "notes/a.md", "already_absent": True}
    shared = hub.call("/v1/memory/get", alias_token, {"path": "notes/a.md"}).json()
    assert shared["content"] == "alice only"  # the alias shares alice's scope
    hub.isolate(False)  # both use global: alice's isolated note is not published
    assert hub.call("/v1/memory/get", hub.alice, {"path": "notes/a.md"}).json()["exists"] is False


def test_bindings(hub: Hub) -> None:
    frozen = hub.call("/v1/binding", hub.alice, {}).json()
    assert frozen == {"principal": "alice", "binding": "global"}
    delegated = hub.admin("/v1/admin/principals", {"action": "delegate", "name": "alice",
                                                  "ttl": 60}).json()
    ok = hub.call("/v1/memory/search", delegated["token"], {"query": "x"})
    assert ok.status == 200
    hub.isolate(True)
    refused = hub.call("/v1/memory/search", delegated["token"], {"query": "x"})
    assert (refused.status, _code(refused)) == (403, "binding_mismatch")
    alice_binding = resolve_scope(Identity("alice"), isolation=True).binding
    declared_old = hub.call("/v1/memory/search", hub.alice, {"query": "x"}, binding="global")
    assert _code(declared_old) == "binding_mismatch"
    assert hub.call("/v1/memory/search", hub.alice, {"query": "x"},
                    binding=alice_binding).status == 200


def test_memory_disabled_refuses_and_keeps_files(hub: Hub, tmp_path: Path) -> None:
    hub.call("/v1/memory/upsert", hub.alice,
             {"path": "a.md", "content": "kept", "expected_revision": "absent"})
    hub.admin("/v1/admin/config", {"action": "set", "key": "memory.enabled", "value": "false"})
    for path, body in (("/v1/memory/get", {"path": "a.md"}), ("/v1/binding", {})):
        response = hub.call(path, hub.alice, body)
        assert (response.status, _code(response)) == (503, "memory_disabled")
    assert (tmp_path / "memory" / "global" / "a.md").read_text() == "kept"
    hub.admin("/v1/admin/config", {"action": "set", "key": "memory.enabled", "value": "true"})
    assert hub.call("/v1/memory/get", hub.alice, {"path": "a.md"}).json()["content"] == "kept"


def test_only_the_owner_administers_over_the_owner_socket(hub: Hub) -> None:
    body = {"action": "set", "key": "isolation.enabled", "value": "true"}
    for token, owner_socket in ((hub.alice, True), (hub.owner, False)):
        response = hub.call("/v1/admin/config", token, body, owner_socket=owner_socket)
        assert (response.status, _code(response)) == (403, "forbidden")
    delegated = hub.admin("/v1/admin/principals", {"action": "delegate", "name": "owner",
                                                  "ttl": 60}).json()["token"]
    refused = hub.call("/v1/admin/principals", delegated, {"action": "list"}, owner_socket=True)
    assert _code(refused) == "forbidden"
    assert hub.config.get("isolation.enabled") is False
    added = hub.admin("/v1/admin/principals", {"action": "add", "name": "carol"}).json()
    assert set(added) == {"principal", "token", "token_id"}
    assert hub.call("/v1/binding", added["token"], {}).status == 200  # applies at once
    revoked = hub.admin("/v1/admin/principals", {"action": "revoke", "name": "carol", "all": True})
    assert revoked.json()["revoked"] == [added["token_id"]]
    assert _code(hub.call("/v1/binding", added["token"], {})) == "unauthenticated"
    bad_ttl = hub.admin("/v1/admin/principals", {"action": "delegate", "name": "owner",
                                                "ttl": "60"})
    assert (bad_ttl.status, _code(bad_ttl)) == (400, "invalid_argument")
    listed = hub.admin("/v1/admin/principals", {"action": "list"}).json()["principals"]
    assert {p["principal"] for p in listed} == {"alice", "bob", "carol", "owner"}
    assert next(p for p in listed if p["principal"] == "carol")["tokens"] == []
