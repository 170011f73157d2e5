"""Memory history on the Hub API (issue 24): who made a change comes from the token that
made it, a principal reads and restores only its own scope's history, and the CLI shows
it; a real Hub process and the installed client for the user's path."""

from __future__ import annotations

import json
import signal
import subprocess
from collections.abc import Iterator, Mapping
from pathlib import Path
from unittest.mock import ANY

import pytest

from amux.memory.history import History
from amux.memory.revision import revision_of
from tests.hub.apihub import ApiHub
from tests.hubproc import HubProcess, amux

SESSION = "20261202-101500-abcdef"


class Hub(ApiHub):
    """`tests/hub/test_api.py`'s Hub over a store with history."""

    def __init__(self, home: Path) -> None:
        self.history = History(home / "history")
        super().__init__(home, self.history)

    def ok(self, path: str, token: str, body: Mapping[str, object]) -> dict[str, object]:
        response = self.call(path, token, dict(body))
        assert response.status == 200, response.json()
        self.history.flush()
        return dict(response.json())

    def log(self, token: str, **body: object) -> list[dict[str, object]]:
        changes = self.ok("/v1/memory/log", token, body)["changes"]
        assert isinstance(changes, list)
        return changes


@pytest.fixture
def api(tmp_path: Path) -> Iterator[Hub]:
    made = Hub(tmp_path)
    yield made
    made.history.close()


def write(api: Hub, token: str, path: str, text: str, expected: str = "absent") -> str:
    return str(api.ok("/v1/memory/upsert", token, {"path": path, "content": text,
                                                   "expected_revision": expected})["revision"])


def test_a_launched_agents_changes_name_the_agent_and_its_session(api: Hub) -> None:
    delegated = api.ok("/v1/delegate", api.alice, {"agent": "claude", "session": SESSION})
    token = str(delegated["token"])
    write(api, token, "notes/a.md", "from the agent\n")
    write(api, api.bob, "notes/b.md", "from bob by hand\n")
    newest, oldest = api.log(api.alice)
    assert (oldest["principal"], oldest["agent"], oldest["session"]) == ("alice", "claude",
                                                                         SESSION)
    assert (newest["principal"], newest["agent"]) == ("bob", None)
    for bad in ({"agent": "../x"}, {"session": "a" * 65}, {"agent": 3}):
        refused = api.call("/v1/delegate", api.alice, bad)
        assert refused.status == 400 and refused.json()["error"]["code"] == "invalid_argument"


def test_one_sessions_changes_page_by_page_and_who_made_each_document(api: Hub) -> None:
    """What the local page asks: `session` keeps one amux session's changes, `before` (a
    page's last commit) gives the next page until `more` is false, the owner's
    admin/history log takes both, and list names who made each document's content."""
    other = "20261202-111500-fedcba"
    tokens = {session: str(api.ok("/v1/delegate", api.alice, {
        "agent": "claude", "session": session})["token"]) for session in (SESSION, other)}
    revision = "absent"
    for n in range(7):
        revision = write(api, tokens[SESSION if n % 2 else other], "MEMORY.md", f"{n}\n",
                         revision)
    ours = [c["commit"] for c in api.log(api.alice, limit=100) if c["session"] == SESSION]
    assert len(ours) == 3
    seen: list[object] = []
    body: dict[str, object] = {"session": SESSION, "limit": 2}
    while True:
        page = api.ok("/v1/memory/log", api.alice, body)
        assert isinstance(page["changes"], list)
        seen += [c["commit"] for c in page["changes"]]
        if not page["more"]:
            break
        body["before"] = seen[-1]
    assert seen == ours
    owner = api.admin("/v1/admin/history", {"action": "log", "principal": "alice",
                                            "session": SESSION, "before": ours[0]}).json()
    assert [c["commit"] for c in owner["changes"]] == ours[1:] and owner["more"] is False
    newest = api.log(api.alice, limit=1)[0]
    assert api.ok("/v1/memory/list", api.alice, {})["documents"] == [{
        "path": "MEMORY.md", "bytes": 2, "revision": revision, "modified_at": ANY}]
    assert api.ok("/v1/memory/list", api.alice, {"changed": True})["documents"] == [{
        "path": "MEMORY.md", "bytes": 2, "revision": revision, "modified_at": ANY,
        "changed": {"at": newest["at"], "operation": "update", "principal": "alice",
                    "agent": "claude", "session": other}}]


def test_log_says_what_is_wrong_with_a_before_or_session(api: Hub) -> None:
    write(api, api.alice, "a.md", "x\n")
    cases = (({"before": "HEAD"}, 400, "invalid_argument", "before must be the commit"),
             ({"before": "0" * 40}, 404, "not_found", f"has no change {'0' * 40}"),
             ({"session": "../x"}, 400, "invalid_argument", "session must be 1-64 of"),
             ({"session": 7}, 400, "invalid_argument", "session must be 1-64 of"))
    for body, status, code, message in cases:
        for answer in (api.call("/v1/memory/log", api.alice, body),
                       api.admin("/v1/admin/history", {"action": "log", **body})):
            error = answer.json()["error"]
            assert (answer.status, error["code"]) == (status, code), body
            assert message in error["message"], error


def test_a_revision_that_is_no_revision_is_refused_by_its_field(api: Hub) -> None:
    """The wire stays exact (a whole SHA-256): the CLI resolves short forms, and the Hub's
    refusal names the field it was given (it said `expected_revision` for every one)."""
    good = write(api, api.alice, "a.md", "x\n")
    for operation, body, field in (
            ("version", {"revision": good[:12]}, "revision"),
            ("diff", {"from_revision": good, "to_revision": good[:12]}, "to_revision"),
            ("restore", {"revision": good, "expected_revision": "@0"}, "expected_revision")):
        refused = api.call(f"/v1/memory/{operation}", api.alice, {"path": "a.md", **body})
        error = refused.json()["error"]
        assert (refused.status, error["code"]) == (400, "invalid_argument"), operation
        assert error["message"].startswith(f"{field} must be 'absent' or a lowercase hex")


def test_diff_show_and_restore_undo_a_bad_write(api: Hub) -> None:
    good = write(api, api.alice, "MEMORY.md", "- prefer pytest\n- tabs: never\n")
    bad = write(api, api.alice, "MEMORY.md", "- prefer unittest\n- tabs: never\n", good)
    diff = api.ok("/v1/memory/diff", api.alice, {"path": "MEMORY.md"})
    assert (diff["from_revision"], diff["to_revision"]) == (good, bad)
    assert "-- prefer pytest\n+- prefer unittest\n" in str(diff["diff"])
    shown = api.ok("/v1/memory/version", api.alice, {"path": "MEMORY.md", "revision": good})
    assert shown["content"] == "- prefer pytest\n- tabs: never\n"
    stale = api.call("/v1/memory/restore", api.alice, {"path": "MEMORY.md", "revision": good,
                                                       "expected_revision": good})
    assert stale.json()["error"]["code"] == "revision_conflict"  # an ordinary CAS write
    restored = api.ok("/v1/memory/restore", api.alice, {"path": "MEMORY.md", "revision": good,
                                                        "expected_revision": bad})
    assert restored["revision"] == good and restored["restored_from"] == good
    assert [c["operation"] for c in api.log(api.alice, path="MEMORY.md")] == [
        "restore", "update", "create"]


def test_a_principal_reads_and_restores_only_its_own_scopes_history(api: Hub) -> None:
    api.isolate(True)
    secret = write(api, api.alice, "plans.md", "alice's plan\n")
    write(api, api.bob, "plans.md", "bob's plan\n")
    assert [c["revision"] for c in api.log(api.bob)] == [revision_of(b"bob's plan\n")]
    for path, body in (("/v1/memory/version", {"path": "plans.md", "revision": secret}),
                       ("/v1/memory/restore", {"path": "plans.md", "revision": secret,
                                               "expected_revision": revision_of(
                                                   b"bob's plan\n")}),
                       ("/v1/memory/diff", {"path": "plans.md", "from_revision": secret,
                                            "to_revision": secret})):
        refused = api.call(path, api.bob, body)
        assert refused.json()["error"]["code"] == "not_found", path
    assert "alice's plan" not in json.dumps(api.log(api.bob))


def test_the_cli_shows_the_log_a_diff_and_restores(memory_hub: HubProcess) -> None:
    """The user's path: the local default Hub of a fresh AMUX_HOME, `python -m amux`."""
    home = memory_hub.home
    first = amux(home, "memory", "upsert", "MEMORY.md", "--expected-revision", "absent",
                 stdin="- prefer pytest\n")[1]["revision"]
    second = amux(home, "memory", "upsert", "MEMORY.md", "--expected-revision", first,
                  stdin="- prefer unittest\n")[1]["revision"]
    code, log, _ = amux(home, "memory", "log", "MEMORY.md", "--since", "1h")
    assert code == 0 and [c["revision"] for c in log["changes"]] == [second, first]
    assert log["more"] is False
    code, page, _ = amux(home, "memory", "log", "--limit", "1")
    assert code == 0 and page["more"] is True
    code, older, _ = amux(home, "memory", "log", "--before", page["changes"][0]["commit"])
    assert code == 0 and older == {"changes": log["changes"][1:], "more": False}
    code, table, _ = amux(home, "memory", "log", "--limit", "1", "--pretty")
    assert f"older changes exist: --before {page['changes'][0]['commit']}" in table
    code, none, _ = amux(home, "memory", "log", "--session", "20261202-101500-abcdef")
    assert code == 0 and none == {"changes": [], "more": False}  # the owner's own writes
    code, _, err = amux(home, "memory", "log", "--session", "../x")
    assert code == 2 and "session must be 1-64 of" in err
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


def edited_by_hand_then_replaced(home: Path, path: str, first: str, by_hand: bytes,
                                 then: str) -> tuple[str, str, str]:
    """`first` written through the CLI, `by_hand` written over it outside amux, `then`
    written over that: the three revisions, history holding all three."""
    created = amux(home, "memory", "upsert", path, "--expected-revision", "absent",
                   stdin=first)[1]["revision"]
    document = home / "memory" / "global" / path
    document.write_bytes(by_hand)
    edited = revision_of(by_hand)
    code, replaced, err = amux(home, "memory", "upsert", path, "--expected-revision", edited,
                               stdin=then)
    assert code == 0, err
    log = amux(home, "memory", "log", path)[1]["changes"]
    assert [c["operation"] for c in log] == ["update", "hand edit", "create"]
    return created, edited, replaced["revision"]


def test_a_purged_version_is_gone_from_every_file_under_amux_home(
        memory_hub: HubProcess) -> None:
    """A person wrote a secret into a document by hand, the Hub kept that version before
    the next write replaced it, and the owner purges it: no command and no file (nor any
    git object, uncompressed) under AMUX_HOME yields those bytes afterwards."""
    home = memory_hub.home
    clean, leaked, fixed = edited_by_hand_then_replaced(
        home, "notes/aws.md", "use the deploy role\n",
        f"use the deploy role\ntoken {SECRET}\n".encode(),
        "use the deploy role (token in the vault)\n")
    assert SECRET.encode() in all_bytes_under(home)  # history kept it, as it must
    code, refused, _ = amux(home, "memory", "purge", "notes/aws.md", "--revision", fixed)
    assert refused["error"]["code"] == "invalid_argument"  # the current content stays
    code, purged, err = amux(home, "memory", "purge", "notes/aws.md", "--revision", leaked)
    assert code == 0 and purged["purged"] == 1, err
    assert SECRET.encode() not in all_bytes_under(home)
    log = amux(home, "memory", "log", "notes/aws.md")[1]["changes"]
    assert [c["revision"] for c in log] == [fixed, clean]
    code, gone, _ = amux(home, "memory", "show", "notes/aws.md", "--revision", leaked)
    assert gone["error"]["code"] == "not_found"
    code, _, _ = amux(home, "memory", "upsert", "notes/aws.md", "--expected-revision",
                      fixed, stdin="after the purge\n")
    assert code == 0  # history goes on after its rebuild


def test_only_the_owner_reads_other_scopes_or_purges(api: Hub) -> None:
    write(api, api.alice, "a.md", "x\n")
    for body in ({"action": "log"}, {"action": "purge", "path": "a.md"}):
        refused = api.call("/v1/admin/history", api.alice, body)
        assert refused.json()["error"]["code"] == "forbidden"
    owner = api.admin("/v1/admin/history", {"action": "log", "principal": "alice"})
    assert [c["path"] for c in owner.json()["changes"]] == ["a.md"]


def test_a_hand_edit_that_is_not_utf8_is_shown_as_such_and_diffed(
        memory_hub: HubProcess) -> None:
    """A person saved a document in Latin-1 by hand and the next write replaced it: its
    version answers `not_utf8` naming the byte, and a diff shows it with those bytes
    replaced, saying so (not `internal`, with a UnicodeDecodeError in the Hub's log)."""
    home = memory_hub.home
    first, by_hand, _ = edited_by_hand_then_replaced(
        home, "notes/cafe.md", "the café opens at 8\n",
        "the café opens at 9\n".encode("latin-1"), "the café opens at 10\n")
    code, shown, err = amux(home, "memory", "show", "notes/cafe.md", "--revision", by_hand)
    assert shown["error"]["code"] == "not_utf8", shown
    assert "not valid UTF-8 at byte 7" in err and code != 0
    code, diff, err = amux(home, "memory", "diff", "notes/cafe.md")
    assert code == 0, err
    assert f"--- a/notes/cafe.md@{by_hand[:12]}\tnot UTF-8: 1 invalid sequence(s) from " \
        "byte 7 shown as U+FFFD\n" in diff
    assert "-the caf\ufffd opens at 9\n+the café opens at 10\n" in diff
    code, diff, err = amux(home, "memory", "diff", "notes/cafe.md", first, by_hand)
    assert code == 0 and "+the caf\ufffd opens at 9\n" in diff, err
    memory_hub.close()
    memory_hub.process.send_signal(signal.SIGTERM)
    _, log_text = memory_hub.process.communicate(timeout=20)
    assert "UnicodeDecodeError" not in log_text and "internal" not in log_text
