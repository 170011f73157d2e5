"""The store refuses credentials on every write; a scope's allow list lets exact values by."""

from __future__ import annotations

import os
import random
import string
from pathlib import Path

import pytest

from amux.errors import InvalidArgument, SecretDetected
from amux.memory import GLOBAL, Identity, Scope, Store, resolve_scope
from amux.memory.secretguard import ALLOW_LIST_NAME, fingerprint

RNG = random.Random(7)
ALICE = resolve_scope(Identity("alice"), isolation=True)
BOB = resolve_scope(Identity("bob"), isolation=True)


def token() -> str:
    return "ghp_" + "".join(RNG.choice(string.ascii_letters + string.digits) for _ in range(36))


def refusal(store: Store, scope: Scope, content: str | bytes, path: str = "notes.md") -> (
    SecretDetected
):
    with pytest.raises(SecretDetected) as caught:
        store.upsert(scope, path, content, "absent")
    return caught.value


def test_a_secret_is_refused_and_nothing_is_written(store: Store, memory_root: Path) -> None:
    secret = token()
    error = refusal(store, GLOBAL, f"# Deploy\n\nbot token: {secret}\n", "projects/x/deploy.md")
    assert (error.line, error.rule, error.fingerprint) == (3, "github-token", fingerprint(secret))
    assert secret not in str(error.to_wire())
    assert not (memory_root / "global").exists()  # not even the scope directory
    assert store.get(GLOBAL, "projects/x/deploy.md")["exists"] is False


def test_a_replacement_is_checked_too(store: Store, memory_root: Path) -> None:
    saved = store.upsert(GLOBAL, "a.md", "clean\n", "absent")
    with pytest.raises(SecretDetected) as caught:
        store.upsert(GLOBAL, "a.md", f"clean\n{token()}\n", saved["revision"])
    assert caught.value.line == 2
    assert (memory_root / "global" / "a.md").read_text() == "clean\n"


def test_bytes_content_is_checked_like_text(store: Store) -> None:
    assert refusal(store, GLOBAL, f"令牌：{token()}\n".encode()).line == 1


def test_ordinary_notes_are_written(store: Store) -> None:
    note = ("revision ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb\n"
            "request 0c623e34-1f72-4bd8-942f-a29e79958e6a, token: <your-token>\n")
    assert store.upsert(GLOBAL, "ok.md", note, "absent")["created"] is True


def test_allowing_a_fingerprint_lets_exactly_that_value_by(store: Store,
                                                            memory_root: Path) -> None:
    secret, other = token(), token()
    allowed = store.allow_secret(GLOBAL, fingerprint(secret))
    assert allowed == {"binding": "global", "fingerprint": fingerprint(secret), "added": True,
                       "fingerprints": [fingerprint(secret)]}
    assert store.upsert(GLOBAL, "fixture.md", f"public test key {secret}\n", "absent")["created"]
    error = refusal(store, GLOBAL, f"{secret}\n{other}\n")
    assert (error.line, error.fingerprint) == (2, fingerprint(other))  # only the allowed one
    assert error.findings == [{"line": 2, "rule": "github-token",
                               "fingerprint": fingerprint(other)}]
    path = memory_root / "global" / ALLOW_LIST_NAME
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    assert fingerprint(secret) in path.read_text()


def test_allow_lists_are_per_scope(store: Store) -> None:
    secret = token()
    store.allow_secret(ALICE, fingerprint(secret))
    assert store.upsert(ALICE, "a.md", secret, "absent")["created"]
    refusal(store, BOB, secret)
    refusal(store, GLOBAL, secret)
    assert store.allowed_secrets(BOB)["fingerprints"] == []


def test_allow_and_remove_are_idempotent(store: Store) -> None:
    value = fingerprint(token())
    assert store.allow_secret(GLOBAL, value)["added"] is True
    assert store.allow_secret(GLOBAL, value)["added"] is False
    assert store.allowed_secrets(GLOBAL)["fingerprints"] == [value]
    assert store.allow_secret(GLOBAL, value, allow=False)["removed"] is True
    assert store.allow_secret(GLOBAL, value, allow=False)["removed"] is False
    assert store.allowed_secrets(GLOBAL)["fingerprints"] == []
    assert store.allow_secret(BOB, value, allow=False) == {
        "binding": BOB.binding, "fingerprint": value, "removed": False, "fingerprints": []}


def test_a_bad_fingerprint_is_an_invalid_argument(store: Store) -> None:
    with pytest.raises(InvalidArgument, match="32 hex digits"):
        store.allow_secret(GLOBAL, "ghp_notafingerprint")


def test_a_hand_edited_allow_list_applies_at_once(store: Store, memory_root: Path) -> None:
    secret = token()
    refusal(store, GLOBAL, secret)
    (memory_root / "global").mkdir(mode=0o700)
    (memory_root / "global" / ALLOW_LIST_NAME).write_text(
        f"# added by hand\n{fingerprint(secret).upper()}   # docs example\n")
    assert store.upsert(GLOBAL, "a.md", secret, "absent")["created"]


def test_an_allow_list_that_is_not_a_file_allows_nothing(store: Store, memory_root: Path,
                                                         tmp_path: Path) -> None:
    secret = token()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.write_text(fingerprint(secret) + "\n")
    (memory_root / "global").mkdir(mode=0o700)
    os.symlink(elsewhere, memory_root / "global" / ALLOW_LIST_NAME)
    refusal(store, GLOBAL, secret)  # a symlinked allow list is never followed


def test_the_allow_list_is_invisible_to_every_operation(store: Store) -> None:
    store.allow_secret(GLOBAL, fingerprint("x"))
    store.upsert(GLOBAL, "a.md", "allow\n", "absent")
    assert [d["path"] for d in store.list(GLOBAL)["documents"]] == ["a.md"]
    assert store.usage(GLOBAL).documents == 1
    assert store.search(GLOBAL, fingerprint("x"))["results"] == []
    assert store.search(GLOBAL, "amux")["results"] == []  # its header is not searched
