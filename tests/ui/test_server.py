"""`amux ui`'s walls, over raw HTTP: the key, Host, Origin, no CORS, the CSP, the record.

Each request is what an attacker's browser or a local process could send; none gets data.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from tests.hubproc import HubProcess, amux
from tests.pageclient import PageClient
from tests.wait import gone, wait_until

SECRET_TEXT = "the user's private note 7f3a"


@pytest.fixture
def noted(page_hub: HubProcess) -> HubProcess:
    status, answer = page_hub.call("/v1/memory/upsert", {
        "path": "private.md", "content": SECRET_TEXT + "\n", "expected_revision": "absent"})
    assert status == 200, answer
    return page_hub


def test_the_page_answers_its_own_request_with_data(noted: HubProcess,
                                                    ui: PageClient) -> None:
    status, answer = ui.api("read", {"path": "private.md"})
    assert status == 200, answer
    assert answer["content"] == SECRET_TEXT + "\n"


@pytest.mark.parametrize("changes", [
    {"X-Amux-Key": None},
    {"X-Amux-Key": "not-the-key"},
    {"X-Amux-Key": ""},
], ids=["no key", "wrong key", "empty key"])
def test_without_the_key_nothing(noted: HubProcess, ui: PageClient,
                                 changes: dict[str, str | None]) -> None:
    status, answer = ui.api("read", {"path": "private.md"}, **changes)
    assert status == 401
    assert answer["error"]["code"] == "unauthenticated"
    assert SECRET_TEXT not in json.dumps(answer)


@pytest.mark.parametrize("host", ["evil.example:{port}", "127.0.0.1:1", "localhost",
                                  "127.0.0.1.nip.io:{port}", ""])
def test_another_host_name_is_refused_before_anything(noted: HubProcess, ui: PageClient,
                                                      host: str) -> None:
    """DNS rebinding: a name that resolves to 127.0.0.1 but is not this server's."""
    status, _, body = ui.request("POST", "/api/read", b'{"path": "private.md"}',
                                 Host=host.format(port=ui.port))
    assert status == 421
    assert SECRET_TEXT.encode() not in body
    status, _, body = ui.request("GET", "/", Host=host.format(port=ui.port))
    assert status == 421


@pytest.mark.parametrize("changes", [
    {"Origin": "http://evil.example"},
    {"Origin": None},
    {"Origin": "null"},
    {"Origin": "http://127.0.0.1:1"},
    {"Sec-Fetch-Site": "cross-site"},
    {"Sec-Fetch-Site": "same-site"},
], ids=["other origin", "no origin", "null origin", "other port", "cross-site",
        "same-site"])
def test_a_request_from_another_site_changes_nothing(noted: HubProcess, ui: PageClient,
                                                     changes: dict[str, str | None]) -> None:
    """A cross-site form or fetch: refused, with the key even, and nothing written."""
    status, answer = ui.api("save", {"path": "private.md", "content": "pwned\n",
                                     "expected_revision": "absent"}, **changes)
    assert status == 403
    assert answer["error"]["code"] == "forbidden"
    _, current = noted.call("/v1/memory/get", {"path": "private.md"})
    assert current["content"] == SECRET_TEXT + "\n"


def test_no_cors_and_a_strict_policy_on_every_answer(ui: PageClient) -> None:
    status, headers, _ = ui.request("OPTIONS", "/api/read", Origin="http://evil.example")
    assert status == 405
    assert not any(name.lower().startswith("access-control-") for name in headers)
    for method, path in (("GET", "/"), ("GET", "/static/app.js"), ("POST", "/api/me")):
        status, headers, _ = ui.request(method, path, b"{}" if method == "POST" else None)
        assert status == 200
        policy = headers["Content-Security-Policy"]
        assert "default-src 'none'" in policy and "script-src 'self'" in policy
        assert "unsafe-inline" not in policy and "unsafe-eval" not in policy
        assert headers["X-Frame-Options"] == "DENY"
        assert headers["Cache-Control"] == "no-store"
        assert not any(name.lower().startswith("access-control-") for name in headers)


def test_the_shell_holds_no_data_and_nothing_else_is_served(noted: HubProcess,
                                                             ui: PageClient) -> None:
    status, _, body = ui.request("GET", "/?view=doc&path=private.md", X_Amux_Key=None)
    assert status == 200 and SECRET_TEXT.encode() not in body
    for path in ("/api/read", "/static/../page.py", "/etc/passwd", "/static/"):
        status, _, body = ui.request("GET", path)
        assert status == 404 and SECRET_TEXT.encode() not in body


def test_bad_bodies_are_clear_errors(ui: PageClient) -> None:
    for body, needle in ((b"[1]", "JSON object"), (b"{", "JSON object"),
                         (b'{"path": 1, "extra": 2}', "does not take extra")):
        status, _, data = ui.request("POST", "/api/read", body)
        assert status == 400 and needle in data.decode(), data
    status, _, data = ui.request("POST", "/api/nothing", b"{}")
    assert status == 400 and b"no operation" in data
    status, _, data = ui.request("POST", "/api/me", b"{}", Content_Type="text/plain")
    assert status == 400 and b"application/json" in data


def test_the_record_is_private_reused_and_removed_on_stop(page_hub: HubProcess,
                                                           ui: PageClient) -> None:
    record = page_hub.home / "run" / "ui.json"
    assert stat.S_IMODE(record.stat().st_mode) == 0o600
    assert json.loads(record.read_text())["key"] == ui.key
    code, again, err = amux(page_hub.home, "ui", "--no-open", "--json")
    assert code == 0, err
    assert (again["pid"], again["url"], again["reused"]) == (ui.pid, ui.url, True)
    code, text, err = amux(page_hub.home, "ui", "--no-open")
    assert code == 0 and ui.url in text and "already running" in text
    code, stopped, err = amux(page_hub.home, "ui", "stop")
    assert code == 0 and stopped["stopped"] is True, err
    wait_until(lambda: gone(ui.pid), 10, "the page's process to end")
    assert not record.exists()
    code, status, _ = amux(page_hub.home, "ui", "status")
    assert (code, status) == (0, {"running": False})


def test_a_new_start_has_a_new_key(page_hub: HubProcess, ui: PageClient) -> None:
    amux(page_hub.home, "ui", "stop")
    code, started, err = amux(page_hub.home, "ui", "--no-open", "--json")
    assert code == 0, err
    try:
        fresh = PageClient(started)
        assert fresh.key != ui.key
        status, _ = fresh.api("me", X_Amux_Key=ui.key)
        assert status == 401
    finally:
        amux(page_hub.home, "ui", "stop")


def test_a_record_others_could_read_is_refused(page_hub: HubProcess,
                                               ui: PageClient) -> None:
    record: Path = page_hub.home / "run" / "ui.json"
    os.chmod(record, 0o644)
    code, _, err = amux(page_hub.home, "ui", "status")
    assert code == 5 and "private" in err


def _principal_connection(hub: HubProcess, name: str, where: Path) -> Path:
    """A connection config for principal `name` (0600), as its owner would hand it over."""
    _, issued = hub.call("/v1/admin/principals", {"action": "add", "name": name})
    config = where / f"{name}.json"
    config.write_text(json.dumps({"version": 1, "hub": f"unix:{hub.socket_path}",
                                  "token": issued["token"]}))
    config.chmod(0o600)
    return config


def test_the_owner_sees_every_scope_and_a_principal_only_its_own(
        page_hub: HubProcess, tmp_path: Path) -> None:
    page_hub.call("/v1/admin/config", {"action": "set", "key": "isolation.enabled",
                                       "value": "true"})
    config = _principal_connection(page_hub, "alice", tmp_path)
    alice_home = tmp_path / "alice-amux"
    env = {"AMUX_MEMORY_CONFIG": str(config)}
    code, started, err = amux(alice_home, "ui", "--no-open", "--json", env=env)
    assert code == 0, err
    try:
        alice = PageClient(started)
        status, written = alice.api("save", {"path": "mine.md", "content": "alice's\n",
                                             "expected_revision": "absent"})
        assert status == 200, written
        status, me = alice.api("me")
        assert status == 200 and me["owner"] is False
        assert [scope["principal"] for scope in me["scopes"]] == ["alice"]
        own = me["scopes"][0]["binding"]
        # Another scope named: the Hub refuses, the page adds nothing.
        status, refused = alice.api("list", {"scope": "global"})
        assert status == 200 and [d["path"] for d in refused["documents"]] == ["mine.md"]
        status, refused = alice.api("purge", {"path": "mine.md"})
        assert status == 403, refused
        status, refused = alice.api("switch", {"enabled": False})
        assert status == 403, refused
    finally:
        amux(alice_home, "ui", "stop", env=env)
    code, owner_started, err = amux(page_hub.home, "ui", "--no-open", "--json")
    assert code == 0, err
    try:
        owner = PageClient(owner_started)
        status, me = owner.api("me")
        assert status == 200 and me["owner"] is True
        bindings = [scope["binding"] for scope in me["scopes"]]
        assert bindings[0] == "global" and own in bindings
        owners = [scope for scope in me["scopes"] if scope["binding"] == me["own_scope"]]
        assert owners and owners[0]["principal"] not in (None, "alice")  # isolated: its own
        status, listing = owner.api("list", {"scope": own})
        assert [d["path"] for d in listing["documents"]] == ["mine.md"]
        status, document = owner.api("read", {"scope": own, "path": "mine.md"})
        assert document["content"] == "alice's\n"
    finally:
        amux(page_hub.home, "ui", "stop")


def test_a_killed_hub_is_started_again_by_the_next_request(page_hub: HubProcess,
                                                            ui: PageClient) -> None:
    """The local default Hub, killed: the page starts it again, as `amux memory` does."""
    page_hub.process.kill()
    page_hub.process.wait(timeout=20)
    try:
        status, answer = ui.api("list")
        assert status == 200, answer
        _, hub_status, _ = amux(page_hub.home, "hub", "status")
        assert hub_status["running"] is True
    finally:
        amux(page_hub.home, "hub", "stop")


def test_a_configured_hub_that_is_gone_is_said_not_started(
        page_hub: HubProcess, tmp_path: Path) -> None:
    config = _principal_connection(page_hub, "bob", tmp_path)
    env = {"AMUX_MEMORY_CONFIG": str(config)}
    code, started, err = amux(tmp_path / "bob-amux", "ui", "--no-open", "--json", env=env)
    assert code == 0, err
    try:
        page_hub.stop()
        status, answer = PageClient(started).api("list")
        assert status == 502 and answer["error"]["code"] == "hub_unreachable", answer
    finally:
        amux(tmp_path / "bob-amux", "ui", "stop", env=env)


def test_a_taken_port_is_one_clear_line(page_hub: HubProcess) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code, out, err = amux(page_hub.home, "ui", "--no-open", "--port", str(port))
    assert code == 2
    assert f"cannot serve on port {port}: Address already in use" in err
    assert out["error"]["code"] == "invalid_argument"
    assert not (page_hub.home / "run" / "ui.json").exists()
