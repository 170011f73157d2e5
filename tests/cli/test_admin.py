"""`amux system config|secrets` and `amux principal` against a real Hub, through the real CLI."""

from __future__ import annotations

import json

from tests.hubproc import HubProcess, amux


def test_owner_administers_and_changes_apply_at_once(hub: HubProcess) -> None:
    home = hub.home
    assert amux(home, "system", "config", "get", "memory.enabled")[1] == {
        "key": "memory.enabled", "value": False,
    }
    assert amux(home, "system", "config", "set", "memory.enabled", "true")[1]["value"] is True
    code, added, _ = amux(home, "principal", "add", "alice")
    assert code == 0 and set(added) == {"principal", "token", "token_id"}
    as_alice = {"AMUX_HUB": f"unix:{hub.socket_path}", "AMUX_TOKEN": added["token"]}
    code, put, _ = amux(home, "memory", "upsert", "a.md", "--expected-revision", "absent",
                        stdin="x\n", env=as_alice)
    assert code == 0 and put["created"] is True
    code, out, _ = amux(home, "system", "config", "set", "isolation.enabled", "true", env=as_alice)
    assert (code, out["error"]["code"]) == (5, "forbidden")
    code, out, _ = amux(home, "principal", "add", "mallory", env=as_alice)
    assert (code, out["error"]["code"]) == (5, "forbidden")
    code, delegated, _ = amux(home, "principal", "delegate", "alice", "--ttl", "600")
    assert code == 0 and delegated["principal"] == "alice"
    code, listed, _ = amux(home, "principal", "list")
    alice = next(p for p in listed["principals"] if p["principal"] == "alice")
    assert {t["kind"] for t in alice["tokens"]} == {"login", "delegated"}
    assert added["token"] not in str(listed)
    code, revoked, _ = amux(home, "principal", "revoke", "alice", "--all")
    assert code == 0 and added["token_id"] in revoked["revoked"]
    code, out, _ = amux(home, "memory", "show", "a.md", env=as_alice)
    assert (code, out["error"]["code"]) == (5, "unauthenticated")


def test_usage_errors(hub: HubProcess) -> None:
    code, out, _ = amux(hub.home, "principal", "revoke", "alice")
    assert (code, out["error"]["code"]) == (2, "invalid_argument")
    code, out, _ = amux(hub.home, "system", "config", "set", "memory.enabled", "perhaps")
    assert (code, out["error"]["code"]) == (2, "invalid_argument")


def test_the_owner_allows_a_false_positive_for_one_scope(hub: HubProcess) -> None:
    home = hub.home
    amux(home, "system", "config", "set", "memory.enabled", "true")
    value = "ghp_" + "Q7xK2mP9vL4nR8sT1wY6zA3bC5dE0fG2hJ4k"  # random, belongs to no one
    text = f"Example from the docs: {value}\n"
    code, out, err = amux(home, "memory", "upsert", "ex.md", "--expected-revision", "absent",
                          stdin=text)
    assert (code, out["error"]["code"]) == (7, "secret_detected")
    assert value not in str(out) and value not in err
    fingerprint = out["error"]["fingerprint"]
    code, allowed, _ = amux(home, "system", "secrets", "allow", fingerprint)
    assert code == 0, allowed
    assert fingerprint in json.dumps(amux(home, "system", "secrets", "list")[1])
    code, put, _ = amux(home, "memory", "upsert", "ex.md", "--expected-revision", "absent",
                        stdin=text)
    assert code == 0 and put["created"] is True
