"""The secret guard through the Hub: the request layer, a real Hub process, the real CLI.

A write that looks like a credential is refused with `secret_detected` (422, exit 7)
naming line, rule and fingerprint and never the value; nothing is written; the
Hub's owner can allow exactly that value for one scope (`/v1/admin/secrets`), and
that allow list does not reach any other scope.
"""

from __future__ import annotations

import json
import logging
import random
import signal
import string
from pathlib import Path

import pytest

from amux.memory.secretguard import fingerprint
from tests.hub.apihub import ApiHub
from tests.hubproc import HubProcess, amux

RNG = random.Random(11)


def secret() -> str:
    """A fresh fake GitHub token (random; belongs to no account)."""
    return "ghp_" + "".join(RNG.choice(string.ascii_letters + string.digits) for _ in range(36))


def note(value: str) -> str:
    return f"# Deploy\n\nThe bot uses {value} for releases.\n"


def upsert(path: str, content: str) -> dict[str, str]:
    return {"path": path, "content": content, "expected_revision": "absent"}


# -- the request layer ------------------------------------------------------------------

@pytest.fixture
def api(tmp_path: Path) -> ApiHub:
    return ApiHub(tmp_path)


def test_refusal_over_the_api_and_nothing_in_the_logs(
    api: ApiHub, caplog: pytest.LogCaptureFixture
) -> None:
    value = secret()
    with caplog.at_level(logging.DEBUG):
        response = api.call("/v1/memory/upsert", api.alice, upsert("deploy.md", note(value)))
    assert response.status == 422
    error = response.json()["error"]
    assert (error["code"], error["line"], error["rule"]) == ("secret_detected", 3, "github-token")
    assert error["fingerprint"] == fingerprint(value)
    assert value not in response.body.decode() and value[4:] not in response.body.decode()
    assert value not in caplog.text
    assert api.call("/v1/memory/get", api.alice, {"path": "deploy.md"}).json()["exists"] is False


def test_only_the_owner_manages_allow_lists(api: ApiHub) -> None:
    body = {"action": "allow", "fingerprint": fingerprint(secret())}
    delegated = api.registry.delegate("alice", "global", None).token
    owner_login = api.registry.issue_token(api.registry.owner or "owner").token
    refusals = [
        api.call("/v1/admin/secrets", api.alice, body, owner_socket=True),  # another principal
        api.call("/v1/admin/secrets", delegated, body, owner_socket=True),  # an agent's token
        api.call("/v1/admin/secrets", api.owner, body),  # the owner, but not on its socket
    ]
    assert [r.json()["error"]["code"] for r in refusals] == ["forbidden"] * 3
    assert api.call("/v1/admin/secrets", owner_login, body, owner_socket=True).status == 200


def test_admin_actions_and_their_validation(api: ApiHub) -> None:
    value = fingerprint(secret())
    added = api.admin("/v1/admin/secrets", {"action": "allow", "fingerprint": value}).json()
    assert added == {"binding": "global", "fingerprint": value, "added": True,
                     "fingerprints": [value]}
    listed = api.admin("/v1/admin/secrets", {"action": "list"}).json()
    assert listed == {"binding": "global", "fingerprints": [value]}
    removed = api.admin("/v1/admin/secrets", {"action": "remove", "fingerprint": value}).json()
    assert removed["removed"] is True and removed["fingerprints"] == []
    bad = [
        {"action": "allow", "fingerprint": "ghp_notafingerprint"},
        {"action": "allow"},
        {"action": "list", "fingerprint": value},
        {"action": "allow", "fingerprint": value, "principal": "nobody"},
        {"action": "allow", "fingerprint": value, "binding": "principal:xyz"},
        {"action": "allow", "fingerprint": value, "binding": "global", "principal": "alice"},
        {"action": "disable"},
    ]
    for body in bad:
        response = api.admin("/v1/admin/secrets", body)
        assert (response.status, response.json()["error"]["code"]) == (400, "invalid_argument")


def test_scope_targets_follow_the_isolation_policy(api: ApiHub) -> None:
    value = secret()
    api.isolate(True)
    api.admin("/v1/admin/secrets", {"action": "allow", "fingerprint": fingerprint(value),
                                    "principal": "alice"})
    assert api.call("/v1/memory/upsert", api.alice, upsert("a.md", note(value))).status == 200
    assert api.call("/v1/memory/upsert", api.bob, upsert("a.md", note(value))).status == 422
    owner = api.admin("/v1/admin/secrets", {"action": "list"}).json()  # default: own scope
    assert owner["binding"].startswith("principal:") and owner["fingerprints"] == []
    binding = api.call("/v1/binding", api.bob).json()["binding"]
    api.admin("/v1/admin/secrets", {"action": "allow", "fingerprint": fingerprint(value),
                                    "binding": binding})
    assert api.call("/v1/memory/upsert", api.bob, upsert("a.md", note(value))).status == 200
    api.isolate(False)  # alice's and bob's lists do not reach the global scope
    assert api.call("/v1/memory/upsert", api.alice, upsert("a.md", note(value))).status == 422


# -- a real Hub over its socket, and the real CLI ------------------------------------------

def test_refused_over_the_socket_then_allowed(memory_hub: HubProcess) -> None:
    value = secret()
    status, body = memory_hub.call("/v1/memory/upsert", upsert("deploy.md", note(value)))
    assert status == 422
    error = body["error"]
    assert (error["code"], error["line"], error["rule"]) == ("secret_detected", 3, "github-token")
    assert error["fingerprint"] == fingerprint(value)
    assert value not in json.dumps(body)
    assert memory_hub.call("/v1/memory/get", {"path": "deploy.md"})[1]["exists"] is False

    code, out, err = amux(memory_hub.home, "memory", "upsert", "deploy.md",
                          "--expected-revision", "absent", stdin=note(value))
    assert code == 7
    assert out["error"]["code"] == "secret_detected" and out["error"]["line"] == 3
    assert value not in json.dumps(out) and value not in err
    assert "secret_detected" in err

    status, allowed = memory_hub.call("/v1/admin/secrets", {
        "action": "allow", "fingerprint": error["fingerprint"]})
    assert (status, allowed["binding"], allowed["added"]) == (200, "global", True)
    code, out, _ = amux(memory_hub.home, "memory", "upsert", "deploy.md",
                        "--expected-revision", "absent", stdin=note(value))
    assert code == 0 and out["created"] is True
    assert memory_hub.call("/v1/memory/get", {"path": "deploy.md"})[1]["content"] == note(value)


def test_allow_lists_are_isolated_between_principals(memory_hub: HubProcess) -> None:
    hub = memory_hub
    hub.call("/v1/admin/config", {"action": "set", "key": "isolation.enabled", "value": "true"})
    tokens = {name: hub.call("/v1/admin/principals", {"action": "add", "name": name})[1]["token"]
              for name in ("alice", "bob")}
    value = secret()

    def write(name: str) -> tuple[int, object]:
        env = {"AMUX_HUB": f"unix:{hub.socket_path}", "AMUX_TOKEN": tokens[name]}
        code, out, _ = amux(hub.home, "memory", "upsert", "deploy.md", "--expected-revision",
                            "absent", stdin=note(value), env=env)
        return code, out

    assert write("alice")[0] == write("bob")[0] == 7
    status, _ = hub.call("/v1/admin/secrets", {"action": "allow", "principal": "alice",
                                               "fingerprint": fingerprint(value)})
    assert status == 200
    assert write("alice")[0] == 0
    code, out = write("bob")
    assert code == 7 and isinstance(out, dict) and out["error"]["code"] == "secret_detected"
    status, body = hub.call("/v1/memory/upsert", upsert("deploy.md", note(value)),
                            token=tokens["bob"])
    assert (status, body["error"]["code"]) == (422, "secret_detected")
    # The agent's side cannot allow anything: its tokens are not the owner's.
    status, body = hub.call("/v1/admin/secrets", {"action": "allow", "fingerprint":
                                                  fingerprint(value)}, token=tokens["bob"])
    assert (status, body["error"]["code"]) == (403, "forbidden")


def test_the_hub_log_never_holds_the_secret(short_home: Path) -> None:
    hub = HubProcess(short_home)
    hub.call("/v1/admin/config", {"action": "set", "key": "memory.enabled", "value": "true"})
    value = secret()
    assert hub.call("/v1/memory/upsert", upsert("a.md", note(value)))[0] == 422
    hub.close()
    hub.process.send_signal(signal.SIGTERM)
    out, err = hub.process.communicate(timeout=20)
    assert hub.process.returncode == 0
    assert value not in out + err and value[4:20] not in out + err
