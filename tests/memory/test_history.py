"""Memory history (issue 24): every change kept with who made it, hand edits caught, a way
back; through the store with a real history (git repositories under a temp AMUX_HOME)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from amux.errors import InvalidArgument, NotFound, RevisionConflict, SecretDetected
from amux.memory import GLOBAL, Scope, Store
from amux.memory.history import History
from amux.memory.revision import ABSENT, revision_of
from amux.memory.versions import Author

ALICE = Author("alice", "claude", "20261202-101500-abcdef")


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "amux"


@pytest.fixture
def kept(home: Path) -> Iterator[Store]:
    """A store with history, as the Hub opens it."""
    history = History(home / "history")
    with Store(home / "memory", exclusive=True, history=history) as store:
        yield store
        history.close()


def changes(store: Store, scope: Scope = GLOBAL, **query: object) -> list[dict[str, object]]:
    assert store.history is not None
    store.history.flush()
    return list(store.log(scope, **query)["changes"])


def test_every_change_is_kept_newest_first_with_who_made_it(kept: Store) -> None:
    first = kept.upsert(GLOBAL, "notes/a.md", "v1\n", ABSENT, ALICE)["revision"]
    second = kept.upsert(GLOBAL, "notes/a.md", "v2\n", first, ALICE)["revision"]
    kept.forget(GLOBAL, "notes/a.md", second, Author("bob"))
    log = changes(kept)
    assert [(c["operation"], c["revision"], c["bytes"]) for c in log] == [
        ("forget", "absent", 0), ("update", second, 3), ("create", first, 3)]
    assert log[1]["principal"] == "alice" and log[1]["agent"] == "claude"
    assert log[1]["session"] == ALICE.session and log[0]["principal"] == "bob"
    assert log[0]["agent"] is None and str(log[0]["at"]).endswith("Z")
    assert kept.version(GLOBAL, "notes/a.md", first) == b"v1\n"
    assert kept.version(GLOBAL, "notes/a.md", second) == b"v2\n"


def test_a_forgotten_document_comes_back_from_its_revision(kept: Store) -> None:
    revision = kept.upsert(GLOBAL, "a.md", "keep me\n", ABSENT, ALICE)["revision"]
    kept.forget(GLOBAL, "a.md", revision, ALICE)
    data = kept.version(GLOBAL, "a.md", revision)
    kept.upsert(GLOBAL, "a.md", data, ABSENT, Author("alice"), operation="restore")
    assert kept.get(GLOBAL, "a.md")["content"] == "keep me\n"
    assert [c["operation"] for c in changes(kept, path="a.md")] == ["restore", "forget", "create"]


def test_refused_writes_leave_no_history(kept: Store) -> None:
    revision = kept.upsert(GLOBAL, "a.md", "one\n", ABSENT, ALICE)["revision"]
    with pytest.raises(RevisionConflict):
        kept.upsert(GLOBAL, "a.md", "two\n", ABSENT, ALICE)
    with pytest.raises(SecretDetected):
        kept.upsert(GLOBAL, "a.md", "token ghp_" + "Abc123xyZ" * 4 + "\n", revision, ALICE)
    with pytest.raises(RevisionConflict):
        kept.forget(GLOBAL, "a.md", "0" * 64, ALICE)
    assert [c["operation"] for c in changes(kept)] == ["create"]


def test_a_hand_edit_is_kept_before_the_hub_replaces_it(kept: Store, home: Path) -> None:
    revision = kept.upsert(GLOBAL, "a.md", "agent\n", ABSENT, ALICE)["revision"]
    changes(kept)  # its commit is made
    (home / "memory" / "global" / "a.md").write_text("by hand\n")
    by_hand = revision_of(b"by hand\n")
    kept.upsert(GLOBAL, "a.md", "agent again\n", by_hand, ALICE)
    log = changes(kept)
    assert [(c["operation"], c["principal"]) for c in log] == [
        ("update", "alice"), ("hand edit", None), ("create", "alice")]
    assert kept.version(GLOBAL, "a.md", by_hand) == b"by hand\n"
    assert log[2]["revision"] == revision


def test_changes_made_while_the_hub_was_stopped_are_caught_up(home: Path) -> None:
    history = History(home / "history")
    with Store(home / "memory", exclusive=True, history=history) as store:
        store.upsert(GLOBAL, "kept.md", "1\n", ABSENT, ALICE)
        store.upsert(GLOBAL, "gone.md", "2\n", ABSENT, ALICE)
        history.close()
    root = home / "memory" / "global"
    (root / "kept.md").write_text("edited while stopped\n")
    (root / "gone.md").unlink()
    (root / "new.md").write_text("added by hand\n")
    history = History(home / "history")
    with Store(home / "memory", exclusive=True, history=history) as store:
        assert store.catch_up_history() == 3
        assert store.catch_up_history() == 0  # nothing new the second time
        log = changes(store)
        history.close()
    assert {(c["path"], c["operation"], c["revision"]) for c in log[:3]} == {
        ("kept.md", "hand edit", revision_of(b"edited while stopped\n")),
        ("gone.md", "hand edit", "absent"),
        ("new.md", "hand edit", revision_of(b"added by hand\n"))}
    assert all(c["principal"] is None for c in log[:3])


def test_log_filters_by_path_time_and_limit(kept: Store) -> None:
    revision = ABSENT
    for n in range(5):
        revision = kept.upsert(GLOBAL, "a.md", f"{n}\n", revision, ALICE)["revision"]
        kept.upsert(GLOBAL, f"other-{n}.md", "x\n", ABSENT, ALICE)
    assert len(changes(kept)) == 10
    assert [c["revision"] for c in changes(kept, path="a.md", limit=2)] == [
        revision_of(b"4\n"), revision_of(b"3\n")]
    assert changes(kept, since=4_000_000_000) == []
    with pytest.raises(NotFound):
        kept.version(GLOBAL, "a.md", revision_of(b"never\n"))


def test_log_pages_through_every_change_once_and_by_session(kept: Store) -> None:
    """`before` (the last commit of a page) gives the next page, newest first, until
    `more` is false; `session` keeps one amux session's changes, and pages the same way."""
    one, two = Author("alice", "claude", "s-one"), Author("alice", "codex", "s-two")
    revisions: dict[str, str] = {}
    for n in range(23):
        path = f"notes/{n % 4}.md"
        revisions[path] = kept.upsert(GLOBAL, path, f"{n}\n", revisions.get(path, ABSENT),
                                      two if n % 3 == 0 else one)["revision"]
    whole = changes(kept, limit=100)
    assert len(whole) == 23 and len({c["commit"] for c in whole}) == 23
    paged: list[dict[str, object]] = []
    before = None
    while True:
        page = kept.log(GLOBAL, limit=5, before=before)
        paged += page["changes"]
        if not page["more"]:
            break
        before = page["changes"][-1]["commit"]
    assert paged == whole and len(paged) == 23
    assert kept.log(GLOBAL, limit=23)["more"] is False
    assert kept.log(GLOBAL, limit=22)["more"] is True
    assert kept.log(GLOBAL, before=whole[-1]["commit"]) == {"changes": [], "more": False}
    by_two = [c for c in whole if c["session"] == "s-two"]
    assert len(by_two) == 8 and all(c["agent"] == "codex" for c in by_two)
    first = kept.log(GLOBAL, session="s-two", limit=3)
    assert first == {"changes": by_two[:3], "more": True}
    assert kept.log(GLOBAL, session="s-two", before=first["changes"][-1]["commit"]) == {
        "changes": by_two[3:], "more": False}
    assert kept.log(GLOBAL, path="notes/0.md", session="s-two")["changes"] == [
        c for c in by_two if c["path"] == "notes/0.md"]
    assert kept.log(GLOBAL, session="s-three") == {"changes": [], "more": False}


def test_log_refuses_a_before_or_session_it_cannot_use(kept: Store) -> None:
    kept.upsert(GLOBAL, "a.md", "x\n", ABSENT, ALICE)
    alice = Scope("principal:" + "a" * 64, ("users", "a" * 64))
    kept.upsert(alice, "b.md", "y\n", ABSENT, ALICE)
    elsewhere = str(changes(kept, alice)[0]["commit"])
    for bad in ("HEAD", "a" * 39, "A" * 40, "g" * 40, 7, ["a" * 40]):
        with pytest.raises(InvalidArgument, match="before must be the commit"):
            kept.log(GLOBAL, before=bad)
    for missing in ("0" * 40, elsewhere):  # no such change, or another scope's
        with pytest.raises(NotFound, match=f"the history of global has no change {missing}"):
            kept.log(GLOBAL, before=missing)
    for bad in ("", "../x", "a" * 65, "-x", 3):
        with pytest.raises(InvalidArgument, match="session must be 1-64 of"):
            kept.log(GLOBAL, session=bad)


def test_list_names_the_change_that_made_each_documents_content(kept: Store, home: Path,
                                                                tmp_path: Path) -> None:
    """`changed`: the newest change of the path when it made the content on disk; null for
    content history has not seen (a new file or an edit by hand), and without history."""
    kept.upsert(GLOBAL, "a.md", "agent's\n", ABSENT, ALICE)
    kept.upsert(GLOBAL, "b.md", "bob's\n", ABSENT, Author("bob"))
    first = kept.upsert(GLOBAL, "c.md", "one\n", ABSENT, ALICE)["revision"]
    kept.forget(GLOBAL, "c.md", first, Author("bob"))
    kept.upsert(GLOBAL, "c.md", kept.version(GLOBAL, "c.md", first), ABSENT, Author("bob"),
                operation="restore")
    (home / "memory" / "global" / "b.md").write_text("edited by hand\n")
    (home / "memory" / "global" / "new.md").write_text("made by hand\n")
    log = {c["path"]: c for c in reversed(changes(kept))}  # each path's newest
    assert "changed" not in kept.list(GLOBAL)["documents"][0]  # reads never consult it
    listed = {d["path"]: d["changed"] for d in kept.list(GLOBAL, changed=True)["documents"]}
    assert listed == {
        "a.md": {"at": log["a.md"]["at"], "operation": "create", "principal": "alice",
                 "agent": "claude", "session": ALICE.session},
        "b.md": None, "new.md": None,
        "c.md": {"at": log["c.md"]["at"], "operation": "restore", "principal": "bob",
                 "agent": None, "session": None}}
    with Store(tmp_path / "plain") as plain:
        plain.upsert(GLOBAL, "a.md", "x\n", ABSENT, ALICE)
        assert plain.list(GLOBAL, changed=True)["documents"][0]["changed"] is None


def test_scopes_have_separate_histories(kept: Store, home: Path) -> None:
    alice = Scope("principal:" + "a" * 64, ("users", "a" * 64))
    revision = kept.upsert(alice, "secret-plan.md", "mine\n", ABSENT, ALICE)["revision"]
    kept.upsert(GLOBAL, "shared.md", "ours\n", ABSENT, ALICE)
    assert [c["path"] for c in changes(kept, alice)] == ["secret-plan.md"]
    assert [c["path"] for c in changes(kept, GLOBAL)] == ["shared.md"]
    with pytest.raises(NotFound):
        kept.version(GLOBAL, "secret-plan.md", revision)
    assert (home / "history" / "users" / f"{'a' * 64}.git").is_dir()
    assert (home / "history" / "global.git").stat().st_mode & 0o077 == 0


def test_git_reads_the_history_as_any_repository(kept: Store, home: Path) -> None:
    first = kept.upsert(GLOBAL, "notes/a.md", "line one\n", ABSENT, ALICE)["revision"]
    kept.upsert(GLOBAL, "notes/a.md", "line one\nline two\n", first, ALICE)
    changes(kept)
    shown = subprocess.run(["git", f"--git-dir={home / 'history' / 'global.git'}", "log", "-p",
                            "--", "notes/a.md"], capture_output=True, text=True, check=True)
    assert "+line two" in shown.stdout and "Amux-Agent: claude" in shown.stdout
    assert "Author: alice <alice@amux>" in shown.stdout


OPERATIONS = st.lists(st.tuples(st.sampled_from(["a.md", "b/c.md"]),
                                st.one_of(st.none(), st.text(max_size=40))),
                      min_size=1, max_size=12)


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(OPERATIONS)
def test_log_and_versions_round_trip_any_sequence_of_changes(tmp_path: Path,
                                                            steps: list[tuple[str, str | None]],
                                                            ) -> None:
    """Whatever the sequence of writes and forgets, the log lists them newest first, and
    every revision it names shows back the bytes that were written."""
    home = tmp_path / str(len(list(tmp_path.iterdir())))
    history = History(home / "history")
    with Store(home / "memory", exclusive=True, history=history) as store:
        current: dict[str, str] = {}
        expected = []
        for path, text in steps:
            if text is None:
                if path in current:
                    store.forget(GLOBAL, path, revision_of(current.pop(path).encode()), ALICE)
                    expected.append((path, "forget", "absent"))
                continue
            before = current.get(path)
            store.upsert(GLOBAL, path, text, ABSENT if before is None
                         else revision_of(before.encode()), ALICE)
            current[path] = text
            expected.append((path, "create" if before is None else "update",
                             revision_of(text.encode())))
        log = changes(store, limit=100)
        assert [(c["path"], c["operation"], c["revision"]) for c in log] == expected[::-1]
        for path, operation, revision in expected:
            if operation != "forget":
                data = store.version(GLOBAL, path, revision)
                assert revision_of(data) == revision
        history.close()


@pytest.mark.parametrize("cut_after", ["rebuild", "set aside"])
def test_a_purge_cut_off_midway_is_finished_or_undone_at_the_next_open(
        home: Path, cut_after: str) -> None:
    """A purge builds the new history beside the old one and swaps them: cut off before
    the swap the old history stands; cut off midway the swap is finished."""
    history = History(home / "history")
    with Store(home / "memory", exclusive=True, history=history) as store:
        first = store.upsert(GLOBAL, "a.md", "one\n", ABSENT, ALICE)["revision"]
        second = store.upsert(GLOBAL, "a.md", "two\n", first, ALICE)["revision"]
        store.upsert(GLOBAL, "a.md", "three\n", second, ALICE)
        history.close()
    repo = home / "history" / "global.git"
    subprocess.run(["cp", "-a", str(repo), str(repo) + ".rebuilt"], check=True)
    if cut_after == "set aside":
        repo.rename(str(repo) + ".purged")
    history = History(home / "history")
    with Store(home / "memory", exclusive=True, history=history) as store:
        assert len(changes(store)) == 3
        assert sorted(p.name for p in (home / "history").iterdir()) == [
            ".amux-root.lock", "global.git"]
        history.close()


def test_retention_drops_old_versions_but_never_the_newest_of_anything(home: Path) -> None:
    now = [1_800_000_000.0]
    history = History(home / "history", clock=lambda: now[0], max_age_seconds=30 * 86400)
    with Store(home / "memory", exclusive=True, history=history,
               wall_clock=lambda: now[0]) as store:
        revision = ABSENT
        for n in range(3):
            revision = store.upsert(GLOBAL, "a.md", f"a{n}\n", revision, ALICE)["revision"]
        gone = store.upsert(GLOBAL, "gone.md", "last words\n", ABSENT, ALICE)["revision"]
        store.forget(GLOBAL, "gone.md", gone, ALICE)
        now[0] += 10 * 86400
        store.upsert(GLOBAL, "a.md", "a3\n", revision, ALICE)
        history.flush()
        assert history.enforce(GLOBAL) == 0  # nothing is 30 days old yet
        now[0] += 25 * 86400
        assert history.enforce(GLOBAL) == 3  # a0, a1, a2: older, and not the newest
        log = changes(store)
        assert [(c["path"], c["operation"]) for c in log] == [
            ("a.md", "update"), ("gone.md", "forget"), ("gone.md", "create")]
        assert store.version(GLOBAL, "gone.md", gone) == b"last words\n"  # still restorable
        history.close()


def test_a_history_over_its_size_drops_its_oldest_versions(home: Path) -> None:
    history = History(home / "history", max_bytes=400_000)
    with Store(home / "memory", exclusive=True, history=history) as store:
        revision = ABSENT
        for n in range(40):  # ~40 incompressible 30 KB versions: ~1.2 MB of history
            text = "".join(f"{n}:{i}:{(i * 7919 + n * 104729) % 1000003:07d}\n"
                           for i in range(2000))[:30_000]
            revision = store.upsert(GLOBAL, "big.md", text, revision, ALICE)["revision"]
        history.flush()
        assert history.enforce(GLOBAL) > 0
        assert history.size(GLOBAL) <= 400_000
        newest = changes(store, limit=1)[0]
        assert newest["revision"] == revision  # the newest version stays
        report = store.doctor(GLOBAL)
        row = next(r for r in report["quota"] if r["quota"] == "history_bytes")
        assert row["limit"] == 400_000 and 0 < row["used"] <= 400_000
        history.close()


def test_an_earlier_version_a_crash_left_kept_goes_into_history(home: Path) -> None:
    """A write keeps the version it replaces as a hard link beside the document until
    history has it; one a crash left behind is recorded (as a hand edit) at the next start
    and removed, and no operation ever shows it."""
    history = History(home / "history")
    with Store(home / "memory", exclusive=True, history=history) as store:
        store.upsert(GLOBAL, "notes/a.md", "agent's first\n", ABSENT, ALICE)
        history.close()
    folder = home / "memory" / "global" / "notes"
    lost = b"acknowledged, never committed\n"
    kept = folder / f".amux-keep-{revision_of(lost)}-a.md"
    kept.write_bytes(lost)
    (folder / "a.md").write_text("agent's third\n")
    history = History(home / "history")
    with Store(home / "memory", exclusive=True, history=history) as store:
        assert [d["path"] for d in store.list(GLOBAL)["documents"]] == ["notes/a.md"]
        assert store.search(GLOBAL, "acknowledged")["results"] == []
        assert store.catch_up_history() == 2  # the kept version, then the document
        assert store.version(GLOBAL, "notes/a.md", revision_of(lost)) == lost
        assert not kept.exists()
        history.close()


def test_writes_in_a_burst_keep_each_version_and_leave_nothing_behind(kept: Store,
                                                                      home: Path) -> None:
    """Back-to-back writes of one document do not wait for history (each replaced version
    is kept beside it meanwhile); once history catches up every version is in it and no
    kept link is left."""
    revision = ABSENT
    written = []
    for n in range(30):
        text = f"version {n}\n"
        revision = kept.upsert(GLOBAL, "a.md", text, revision, ALICE)["revision"]
        written.append(revision)
    log = changes(kept, path="a.md", limit=100)
    assert [c["revision"] for c in log] == written[::-1]
    assert sorted(p.name for p in (home / "memory" / "global").iterdir()) == ["a.md"]


def test_a_version_history_holds_already_is_not_kept_again(
        kept: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """Once history durably holds a document's version, replacing it makes no keep link
    (an agent's writes, seconds apart, cost what they cost without history); while its
    commit is still waiting, it does."""
    import os

    links: list[str] = []
    real_link = os.link

    def counted(*args: object, **kwargs: object) -> None:
        links.append(str(args[1]))
        real_link(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "link", counted)
    first = kept.upsert(GLOBAL, "a.md", "one\n", ABSENT, ALICE)["revision"]
    second = kept.upsert(GLOBAL, "a.md", "two\n", first, ALICE)["revision"]
    assert len(links) == 1  # "one" was still waiting for its commit
    changes(kept)  # flushed: history holds "two"
    kept.upsert(GLOBAL, "a.md", "three\n", second, ALICE)
    assert len(links) == 1
    assert [c["revision"] for c in changes(kept)][1:] == [second, first]
