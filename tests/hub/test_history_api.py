"""Memory history on the Hub API (issue 24): who made a change comes from the token that
made it, a principal reads and restores only its own scope's history, and the CLI shows
it; a real Hub process and the installed client for the user's path."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from amux.hub.api import HubApi, Request, Response
from amux.hub.config import ConfigFile
from amux.hub.identities import Registry
from amux.memory import Store
from amux.memory.history import History
from amux.memory.revision import revision_of
from tests.hubproc import HubProcess, amux

SESSION = "20261202-101500-abcdef"


class Hub:
    """A HubApi over a store with history: an owner, alice and bob, memory on."""

    def __init__(self, home: Path) -> None:
        self.config = ConfigFile(home)
        self.config.set("memory.enabled", "true")
        self.registry = Registry(home)
        owner = self.registry.ensure_owner("owner")
        assert owner is not None
        self.owner = owner.token
        self.alice = self.registry.add("alice").token
        self.bob = self.registry.add("bob").token
        self.history = History(home / "history")
        self.store = Store(home / "memory", history=self.history)
        self.api = HubApi(self.store, self.registry, self.config)

    def call(self, path: str, token: str, body: Mapping[str, object],
             owner_socket: bool = False) -> Response:
        return self.api.handle(Request("POST", path, json.dumps(body).encode(), token, None,
                                       owner_socket))

    def ok(self, path: str, token: str, body: Mapping[str, object]) -> dict[str, object]:
        response = self.call(path, token, body)
        assert response.status == 200, response.json()
        self.history.flush()
        return dict(response.json())

    def log(self, token: str, **body: object) -> list[dict[str, object]]:
        changes = self.ok("/v1/memory/log", token, body)["changes"]
        assert isinstance(changes, list)
        return changes


@pytest.fixture
def hub(tmp_path: Path) -> Iterator[Hub]:
    made = Hub(tmp_path)
    yield made
    made.history.close()


def write(hub: Hub, token: str, path: str, text: str, expected: str = "absent") -> str:
    return str(hub.ok("/v1/memory/upsert", token, {"path": path, "content": text,
                                                   "expected_revision": expected})["revision"])


def test_a_launched_agents_changes_name_the_agent_and_its_session(hub: Hub) -> None:
    delegated = hub.ok("/v1/delegate", hub.alice, {"agent": "claude", "session": SESSION})
    token = str(delegated["token"])
    write(hub, token, "notes/a.md", "from the agent\n")
    write(hub, hub.bob, "notes/b.md", "from bob by hand\n")
    newest, oldest = hub.log(hub.alice)
    assert (oldest["principal"], oldest["agent"], oldest["session"]) == ("alice", "claude",
                                                                         SESSION)
    assert (newest["principal"], newest["agent"]) == ("bob", None)
    for bad in ({"agent": "../x"}, {"session": "a" * 65}, {"agent": 3}):
        refused = hub.call("/v1/delegate", hub.alice, bad)
        assert refused.status == 400 and refused.json()["error"]["code"] == "invalid_argument"


def test_diff_show_and_restore_undo_a_bad_write(hub: Hub) -> None:
    good = write(hub, hub.alice, "MEMORY.md", "- prefer pytest\n- tabs: never\n")
    bad = write(hub, hub.alice, "MEMORY.md", "- prefer unittest\n- tabs: never\n", good)
    diff = hub.ok("/v1/memory/diff", hub.alice, {"path": "MEMORY.md"})
    assert (diff["from_revision"], diff["to_revision"]) == (good, bad)
    assert "-- prefer pytest\n+- prefer unittest\n" in str(diff["diff"])
    shown = hub.ok("/v1/memory/version", hub.alice, {"path": "MEMORY.md", "revision": good})
    assert shown["content"] == "- prefer pytest\n- tabs: never\n"
    stale = hub.call("/v1/memory/restore", hub.alice, {"path": "MEMORY.md", "revision": good,
                                                       "expected_revision": good})
    assert stale.json()["error"]["code"] == "revision_conflict"  # an ordinary CAS write
    restored = hub.ok("/v1/memory/restore", hub.alice, {"path": "MEMORY.md", "revision": good,
                                                        "expected_revision": bad})
    assert restored["revision"] == good and restored["restored_from"] == good
    assert [c["operation"] for c in hub.log(hub.alice, path="MEMORY.md")] == [
        "restore", "update", "create"]


def test_a_principal_reads_and_restores_only_its_own_scopes_history(hub: Hub) -> None:
    isolate = {"action": "set", "key": "isolation.enabled", "value": "true"}
    assert hub.call("/v1/admin/config", hub.owner, isolate, owner_socket=True).status == 200
    secret = write(hub, hub.alice, "plans.md", "alice's plan\n")
    write(hub, hub.bob, "plans.md", "bob's plan\n")
    assert [c["revision"] for c in hub.log(hub.bob)] == [revision_of(b"bob's plan\n")]
    for path, body in (("/v1/memory/version", {"path": "plans.md", "revision": secret}),
                       ("/v1/memory/restore", {"path": "plans.md", "revision": secret,
                                               "expected_revision": revision_of(
                                                   b"bob's plan\n")}),
                       ("/v1/memory/diff", {"path": "plans.md", "from_revision": secret,
                                            "to_revision": secret})):
        refused = hub.call(path, hub.bob, body)
        assert refused.json()["error"]["code"] == "not_found", path
    assert "alice's plan" not in json.dumps(hub.log(hub.bob))


def test_the_cli_shows_the_log_a_diff_and_restores(tmp_path: Path) -> None:
    """The user's path: the local default Hub of a fresh AMUX_HOME, `python -m amux`."""
    home = tmp_path / "h"
    hub = HubProcess(home)
    try:
        hub.call("/v1/admin/config", {"action": "set", "key": "memory.enabled", "value": "true"})
        first = amux(home, "memory", "upsert", "MEMORY.md", "--expected-revision", "absent",
                     stdin="- prefer pytest\n")[1]["revision"]
        second = amux(home, "memory", "upsert", "MEMORY.md", "--expected-revision", first,
                      stdin="- prefer unittest\n")[1]["revision"]
        code, log, _ = amux(home, "memory", "log", "MEMORY.md", "--since", "1h")
        assert code == 0 and [c["revision"] for c in log["changes"]] == [second, first]
        code, diff, _ = amux(home, "memory", "diff", "MEMORY.md")
        assert code == 0 and "-- prefer pytest\n+- prefer unittest\n" in diff
        code, shown, _ = amux(home, "memory", "show", "MEMORY.md", "--revision", first)
        assert shown["content"] == "- prefer pytest\n"
        code, restored, _ = amux(home, "memory", "restore", "MEMORY.md", "--revision", first,
                                 "--expected-revision", second)
        assert code == 0 and restored["revision"] == first
        code, table, _ = amux(home, "memory", "log", "--pretty")
        assert code == 0 and "restore" in table and "MEMORY.md" in table
        code, _, err = amux(home, "memory", "log", "--since", "yesterday-ish")
        assert code == 2 and "--since 'yesterday-ish'" in err
    finally:
        hub.stop()


SECRET = "ghp_" + "Q7xv2LmN9pR4tY8wK3zA6bC1dE5fG0hJ2kM4"


def all_bytes_under(home: Path) -> bytes:
    """Every file under `home`, and every git object of its histories uncompressed."""
    found = b""
    for path in home.rglob("*"):
        if path.is_file() and not path.is_symlink() and not path.is_socket():
            found += path.read_bytes()
    for repo in home.rglob("*.git"):
        found += subprocess.run(["git", f"--git-dir={repo}", "cat-file", "--batch-all-objects",
                                 "--batch"], capture_output=True, check=True).stdout
    return found


def test_a_purged_version_is_gone_from_every_file_under_amux_home(tmp_path: Path) -> None:
    """A person wrote a secret into a document by hand, the Hub kept that version before
    the next write replaced it, and the owner purges it: no command and no file (nor any
    git object, uncompressed) under AMUX_HOME yields those bytes afterwards."""
    home = tmp_path / "h"
    hub = HubProcess(home)
    try:
        hub.call("/v1/admin/config", {"action": "set", "key": "memory.enabled", "value": "true"})
        clean = amux(home, "memory", "upsert", "notes/aws.md", "--expected-revision", "absent",
                     stdin="use the deploy role\n")[1]["revision"]
        document = home / "memory" / "global" / "notes" / "aws.md"
        document.write_text(f"use the deploy role\ntoken {SECRET}\n")  # by hand
        leaked = revision_of(document.read_bytes())
        code, fixed, err = amux(home, "memory", "upsert", "notes/aws.md", "--expected-revision",
                                leaked, stdin="use the deploy role (token in the vault)\n")
        assert code == 0, err
        log = amux(home, "memory", "log", "notes/aws.md")[1]["changes"]
        assert [c["operation"] for c in log] == ["update", "hand edit", "create"]
        assert SECRET.encode() in all_bytes_under(home)  # history kept it, as it must
        code, refused, _ = amux(home, "memory", "purge", "notes/aws.md", "--revision",
                                fixed["revision"])
        assert refused["error"]["code"] == "invalid_argument"  # the current content stays
        code, purged, err = amux(home, "memory", "purge", "notes/aws.md", "--revision", leaked)
        assert code == 0 and purged["purged"] == 1, err
        assert SECRET.encode() not in all_bytes_under(home)
        log = amux(home, "memory", "log", "notes/aws.md")[1]["changes"]
        assert [c["revision"] for c in log] == [fixed["revision"], clean]
        code, gone, _ = amux(home, "memory", "show", "notes/aws.md", "--revision", leaked)
        assert gone["error"]["code"] == "not_found"
        code, _, _ = amux(home, "memory", "upsert", "notes/aws.md", "--expected-revision",
                          fixed["revision"], stdin="after the purge\n")
        assert code == 0  # history goes on after its rebuild
    finally:
        hub.stop()


def test_only_the_owner_reads_other_scopes_or_purges(hub: Hub) -> None:
    write(hub, hub.alice, "a.md", "x\n")
    for body in ({"action": "log"}, {"action": "purge", "path": "a.md"}):
        refused = hub.call("/v1/admin/history", hub.alice, body)
        assert refused.json()["error"]["code"] == "forbidden"
    owner = hub.call("/v1/admin/history", hub.owner, {"action": "log", "principal": "alice"},
                     owner_socket=True)
    assert [c["path"] for c in owner.json()["changes"]] == ["a.md"]
