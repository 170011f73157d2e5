"""The Hub request layer against a real store, registry and config on temp dirs."""

from __future__ import annotations

from pathlib import Path

import pytest

from amux.hub import api as api_module
from amux.hub.api import Request, Response
from amux.hub.identities import Registry
from amux.memory.scope import Identity, resolve_scope
from tests.hub.apihub import ApiHub as Hub
from tests.memory.versions_in_memory import InMemory


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


def test_the_owner_previews_a_principals_binding_read_only(hub: Hub) -> None:
    """What an isolated run's dry run shows, and the binding its grant is then bound to."""
    def tokens() -> list[object]:
        return [p["tokens"] for p in hub.admin("/v1/admin/principals", {"action": "list"})
                .json()["principals"]]

    for isolation in (False, True):
        hub.isolate(isolation)
        answer = hub.admin("/v1/admin/principals", {"action": "binding", "name": "alice"})
        assert answer.json() == {"principal": "alice", "binding": resolve_scope(
            Identity("alice"), isolation=isolation).binding}
        issued = hub.admin("/v1/admin/principals", {"action": "delegate", "name": "alice"})
        assert hub.registry.authenticate(issued.json()["token"]).binding == \
            answer.json()["binding"]
    before = tokens()
    hub.registry.alias("alice", "alice-unix")
    by_alias = hub.admin("/v1/admin/principals", {"action": "binding", "name": "alice-unix"})
    assert by_alias.json()["principal"] == "alice"
    unknown = hub.admin("/v1/admin/principals", {"action": "binding", "name": "nobody"})
    assert (unknown.status, _code(unknown)) == (400, "invalid_argument")
    refused = hub.call("/v1/admin/principals", hub.alice, {"action": "binding", "name": "bob"})
    assert (refused.status, _code(refused)) == (403, "forbidden")
    assert tokens() == before  # a preview issues nothing


# -- a principal's own delegated tokens: POST /v1/delegate and /v1/revoke ----------------

def test_a_login_token_delegates_to_itself_on_any_listener(hub: Hub) -> None:
    for token, principal in ((hub.alice, "alice"), (hub.owner, "owner")):
        for owner_socket in (False, True):
            answer = hub.call("/v1/delegate", token, {}, owner_socket=owner_socket)
            assert answer.status == 200, answer.json()
            issued = answer.json()
            assert set(issued) == {"principal", "token", "token_id", "binding", "expires_at"}
            assert (issued["principal"], issued["binding"]) == (principal, "global")
            assert issued["token"] != token
            assert hub.call("/v1/memory/search", issued["token"], {"query": "x"}).status == 200
            credential = hub.registry.authenticate(issued["token"])
            assert (credential.kind, credential.binding) == ("delegated", "global")
    hub.isolate(True)  # bound to the caller's scope now, which isolation makes its own
    issued = hub.call("/v1/delegate", hub.bob, {"ttl": 60}).json()
    assert issued["binding"] == resolve_scope(Identity("bob"), isolation=True).binding


def test_a_delegated_token_cannot_delegate_revoke_or_administer(hub: Hub) -> None:
    delegated = hub.call("/v1/delegate", hub.owner, {}, owner_socket=True).json()
    for path, body in (("/v1/delegate", {}), ("/v1/revoke", {"token_id": delegated["token_id"]}),
                       ("/v1/admin/principals", {"action": "list"})):
        refused = hub.call(path, delegated["token"], body, owner_socket=True)
        assert (refused.status, _code(refused)) == (403, "forbidden"), path
    assert hub.call("/v1/binding", delegated["token"], {}).status == 200  # still its own


def test_self_delegation_ttl_has_a_default_and_a_maximum(hub: Hub) -> None:
    from amux.hub.identities import SELF_DELEGATE_TTL_DEFAULT, SELF_DELEGATE_TTL_MAX

    now = 1_000_000.0
    hub.registry.clock = lambda: now
    default = hub.call("/v1/delegate", hub.alice, {}).json()
    assert default["expires_at"] == now + SELF_DELEGATE_TTL_DEFAULT
    longest = hub.call("/v1/delegate", hub.alice, {"ttl": SELF_DELEGATE_TTL_MAX}).json()
    assert longest["expires_at"] == now + SELF_DELEGATE_TTL_MAX
    for ttl in (0, -1, SELF_DELEGATE_TTL_MAX + 1, "60", True, None, 1e309):
        refused = hub.call("/v1/delegate", hub.alice, {"ttl": ttl})
        assert (refused.status, _code(refused)) == (400, "invalid_argument"), ttl
    short = hub.call("/v1/delegate", hub.alice, {"ttl": 30}).json()
    now += 31
    expired = hub.call("/v1/binding", short["token"], {})
    assert _code(expired) == "unauthenticated"
    unknown_field = hub.call("/v1/delegate", hub.alice, {"name": "bob"})
    assert _code(unknown_field) == "invalid_argument"  # no delegating for anyone else


def test_self_delegation_checks_the_expected_binding_and_memory(hub: Hub) -> None:
    frozen = hub.call("/v1/delegate", hub.alice, {"binding": "global"})
    assert frozen.json()["binding"] == "global"
    hub.isolate(True)  # a resumed session frozen to global no longer matches
    body: dict[str, str]
    for body, header in (({"binding": "global"}, None), ({}, "global")):  # body or header
        refused = hub.call("/v1/delegate", hub.alice, body, binding=header)
        assert (refused.status, _code(refused)) == (403, "binding_mismatch")
    malformed = hub.call("/v1/delegate", hub.alice, {"binding": "principal:alice"})
    assert _code(malformed) == "invalid_argument"
    hub.admin("/v1/admin/config", {"action": "set", "key": "memory.enabled", "value": "false"})
    off = hub.call("/v1/delegate", hub.alice, {})  # memory off: still issued (SPEC §3:
    assert off.status == 200  # a resumed session's calls say memory_disabled until it is on)
    refused = hub.call("/v1/memory/search", off.json()["token"], {"query": "x"})
    assert (refused.status, _code(refused)) == (503, "memory_disabled")


def test_a_principal_revokes_its_own_delegated_tokens_only(hub: Hub) -> None:
    alices = hub.call("/v1/delegate", hub.alice, {}).json()
    bobs = hub.call("/v1/delegate", hub.bob, {}).json()
    for token, token_id in ((hub.bob, alices["token_id"]), (hub.owner, alices["token_id"])):
        refused = hub.call("/v1/revoke", token, {"token_id": token_id}, owner_socket=True)
        assert (refused.status, _code(refused)) == (400, "invalid_argument")
    assert hub.call("/v1/binding", alices["token"], {}).status == 200  # still valid
    alice_login = hub.registry.authenticate(hub.alice).token_id
    refused = hub.call("/v1/revoke", hub.alice, {"token_id": alice_login})
    assert _code(refused) == "invalid_argument"  # a login token is the owner's to revoke
    assert hub.call("/v1/binding", hub.alice, {}).status == 200
    revoked = hub.call("/v1/revoke", hub.alice, {"token_id": alices["token_id"]})
    assert revoked.json() == {"principal": "alice", "revoked": [alices["token_id"]]}
    assert _code(hub.call("/v1/binding", alices["token"], {})) == "unauthenticated"
    assert _code(hub.call("/v1/revoke", hub.alice, {"token_id": alices["token_id"]})) \
        == "invalid_argument"  # already gone
    assert hub.call("/v1/binding", bobs["token"], {}).status == 200
    assert hub.call("/v1/binding", hub.alice, {}).status == 200  # the login token works on
    for body in ({}, {"token_id": 7}, {"token_id": "x", "name": "bob"}):
        assert _code(hub.call("/v1/revoke", hub.alice, body)) == "invalid_argument"


def test_self_delegation_is_durable_and_never_logged(hub: Hub, tmp_path: Path,
                                                     caplog: pytest.LogCaptureFixture) -> None:
    import logging

    caplog.set_level(logging.DEBUG)
    issued = hub.call("/v1/delegate", hub.alice, {}).json()
    again = Registry(tmp_path)  # what a restarted Hub would accept
    assert again.authenticate(issued["token"]).kind == "delegated"
    assert issued["token"] not in (tmp_path / "identities.json").read_text()
    hub.call("/v1/revoke", hub.alice, {"token_id": issued["token_id"]})
    with pytest.raises(Exception, match="unknown or revoked"):
        Registry(tmp_path).authenticate(issued["token"])
    assert issued["token"] not in caplog.text and hub.alice not in caplog.text


# -- the owner's view of any scope: /v1/admin/memory and /v1/admin/scopes -----------------

def test_only_the_owner_opens_scopes_over_the_owner_socket(hub: Hub) -> None:
    delegated = hub.call("/v1/delegate", hub.owner, {}, owner_socket=True).json()["token"]
    for path, body in (("/v1/admin/memory", {"operation": "list"}), ("/v1/admin/scopes", {})):
        for token, owner_socket in ((hub.alice, True), (delegated, True), (hub.owner, False)):
            refused = hub.call(path, token, body, owner_socket=owner_socket)
            assert (refused.status, _code(refused)) == (403, "forbidden"), (path, token)
        assert hub.admin(path, body).status == 200


def test_the_owner_reads_and_writes_a_principals_scope_under_isolation(tmp_path: Path) -> None:
    hub = Hub(tmp_path, history=InMemory())
    hub.isolate(True)
    alices = resolve_scope(Identity("alice"), isolation=True).binding
    put = hub.call("/v1/memory/upsert", hub.alice, {"path": "plans.md", "content": "mine\n",
                                                    "expected_revision": "absent"}).json()
    listed = hub.admin("/v1/admin/memory", {"operation": "list", "principal": "alice",
                                            "changed": True}).json()
    assert [(d["path"], d["changed"]["principal"]) for d in listed["documents"]] == [
        ("plans.md", "alice")]
    assert hub.admin("/v1/admin/memory", {"operation": "list"}).json()["documents"] == []
    fixed = hub.admin("/v1/admin/memory", {
        "operation": "upsert", "binding": alices, "path": "plans.md", "content": "fixed\n",
        "expected_revision": put["revision"]})
    assert fixed.status == 200, fixed.json()
    assert hub.call("/v1/memory/get", hub.alice, {"path": "plans.md"}).json()["content"] == \
        "fixed\n"
    hub.registry.alias("alice", "alice-unix")  # a principal is named as everywhere else
    log = hub.admin("/v1/admin/memory", {"operation": "log", "principal": "alice-unix",
                                         "limit": 1}).json()
    assert log["changes"][0]["principal"] == "owner" and log["more"] is True  # as the owner
    found = hub.admin("/v1/admin/memory", {"operation": "search", "query": "fixed",
                                           "principal": "bob"}).json()
    assert found["results"] == []  # bob's scope is its own
    for body, message in (
            ({"operation": "list", "principal": "alice", "binding": alices}, "not both"),
            ({"operation": "list", "principal": "nobody"}, "no principal or alias"),
            ({"operation": "list", "binding": "principal:alice"}, "binding"),
            ({"operation": "list", "content": "x"}, "list does not take content"),
            ({"operation": "upsert", "path": "a.md"}, "upsert needs content, expected_revision"),
            ({"operation": "get", "path": "a.md", "action": "log"}, "get does not take action")):
        refused = hub.admin("/v1/admin/memory", body)
        assert _code(refused) == "invalid_argument", body
        assert message in refused.json()["error"]["message"], refused.json()


def test_the_owner_opens_memory_while_it_is_off_for_everyone_else(hub: Hub) -> None:
    hub.admin("/v1/admin/config", {"action": "set", "key": "memory.enabled", "value": "false"})
    for token, path, body in ((hub.owner, "/v1/memory/list", {}),
                              (hub.alice, "/v1/memory/get", {"path": "a.md"})):
        refused = hub.call(path, token, body, owner_socket=True)
        assert (refused.status, _code(refused)) == (503, "memory_disabled")
    written = hub.admin("/v1/admin/memory", {"operation": "upsert", "path": "a.md",
                                             "content": "kept\n", "expected_revision": "absent"})
    assert written.status == 200, written.json()
    got = hub.admin("/v1/admin/memory", {"operation": "get", "path": "a.md"}).json()
    assert got["content"] == "kept\n"
    listed = hub.admin("/v1/admin/memory", {"operation": "list",
                                            "changed": True}).json()["documents"]
    assert [(d["path"], d["changed"]) for d in listed] == [("a.md", None)]  # no history here


def test_the_owner_lists_the_scopes_it_may_open(hub: Hub) -> None:
    assert hub.admin("/v1/admin/scopes", {}).json() == {
        "isolation": False, "scopes": [{"binding": "global", "principal": None,
                                        "exists": False}]}
    hub.registry.add("aaron")  # before "owner" by name: the owner still comes first
    hub.isolate(True)
    hub.call("/v1/memory/upsert", hub.bob, {"path": "a.md", "content": "x\n",
                                            "expected_revision": "absent"})

    def scope(name: str, exists: bool = False) -> dict[str, object]:
        return {"binding": resolve_scope(Identity(name), isolation=True).binding,
                "principal": name, "exists": exists}

    assert hub.admin("/v1/admin/scopes", {}).json() == {"isolation": True, "scopes": [
        {"binding": "global", "principal": None, "exists": False}, scope("owner"),
        scope("aaron"), scope("alice"), scope("bob", exists=True)]}
    refused = hub.admin("/v1/admin/scopes", {"isolation": True})
    assert _code(refused) == "invalid_argument"


# -- dispatch: one table carries each operation's fields and handler ---------------------------


def test_each_memory_operation_is_answered_by_its_own_row(hub: Hub,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Every name the Hub answers under /v1/memory/ runs the handler beside its fields in
    `MEMORY_OPERATIONS`, and nothing else (issue 33: the last branch of an if-chain used to
    be an unconditional forget)."""
    ran: list[str] = []
    for name, row in list(api_module.MEMORY_OPERATIONS.items()):
        monkeypatch.setitem(api_module.MEMORY_OPERATIONS, name, row._replace(
            run=lambda api, scope, body, author, name=name: ran.append(name) or {}))
    for name, row in api_module.MEMORY_OPERATIONS.items():
        body = {field: "absent" if "revision" in field else "a.md" for field in row.required}
        assert hub.call(f"/v1/memory/{name}", hub.alice, body).status == 200, name
        assert ran[-1] == name
        assert hub.admin("/v1/admin/memory", {"operation": name, **body}).status == 200, name
        assert ran[-1] == name
    assert ran == [name for name in api_module.MEMORY_OPERATIONS for _ in range(2)]


def test_an_operation_without_a_handler_cannot_be_added_and_unknown_ones_delete_nothing(
        hub: Hub) -> None:
    """A row cannot be made without its handler; a name the table does not hold is refused
    in one place, with a forget's fields, and the document stays."""
    with pytest.raises(TypeError):
        api_module.MemoryOperation(frozenset({"path", "expected_revision"}),  # type: ignore[call-arg]
                                   frozenset())
    put = hub.call("/v1/memory/upsert", hub.alice, {"path": "a.md", "content": "kept\n",
                                                    "expected_revision": "absent"}).json()
    for name in ("archive", "Forget", "forget/", "", "forget\x00"):
        refused = hub.call(f"/v1/memory/{name}", hub.alice,
                           {"path": "a.md", "expected_revision": put["revision"]})
        assert _code(refused) == "invalid_argument", name
        assert "unknown memory operation" in refused.json()["error"]["message"]
        by_owner = hub.admin("/v1/admin/memory", {"operation": name, "path": "a.md",
                                                  "expected_revision": put["revision"]})
        assert by_owner.json() == refused.json(), name  # the same refusal, in one place
    for operation in (None, 7, ["forget"]):
        refused = hub.admin("/v1/admin/memory", {"operation": operation, "path": "a.md",
                                                 "expected_revision": put["revision"]})
        assert "unknown memory operation" in refused.json()["error"]["message"], operation
    assert _code(hub.admin("/v1/admin/memory", {"path": "a.md"})) == "invalid_argument"
    assert hub.call("/v1/memory/get", hub.alice, {"path": "a.md"}).json()["content"] == "kept\n"


def test_the_hub_sets_historys_limits_from_its_config_at_start_and_on_reload(
        tmp_path: Path) -> None:
    engine = InMemory()
    hub = Hub(tmp_path, history=engine)
    assert (engine.max_bytes, engine.max_age_seconds) == (256 * 1024 * 1024, 365 * 86400)
    hub.config.set("history.max_mib", "64")
    hub.config.set("history.keep_days", "0")
    hub.api.reload()
    assert (engine.max_bytes, engine.max_age_seconds) == (64 * 1024 * 1024, 0)
