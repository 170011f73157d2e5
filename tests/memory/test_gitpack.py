"""History's own pack writer (amux/memory/gitpack.py): what it writes is git as git
writes it: `git fsck --strict` finds nothing, libgit2 rewrites every tree to the same id,
and many batches stay a bounded number of packs with every version readable."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pygit2
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from amux.memory import GLOBAL, Store
from amux.memory.history import PACKS_MAX, History
from amux.memory.revision import ABSENT, revision_of
from amux.memory.versions import Author

ALICE = Author("alice", "codex", "20261202-161500-abcdef")
PATHS = ["a.md", "a-b.md", "a/x.md", "a/b/y.md", "a/b/c/z.md", "ab.md", "b/a.md"]


def _fsck(git_dir: Path) -> None:
    checked = subprocess.run(["git", f"--git-dir={git_dir}", "fsck", "--full", "--strict",
                              "--no-dangling"], capture_output=True, text=True, timeout=60)
    assert checked.returncode == 0 and not checked.stderr.strip(), checked.stderr


@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from(PATHS), st.one_of(st.none(), st.binary(max_size=60)
                                                            .map(lambda b: b.hex()))),
                min_size=1, max_size=16))
def test_every_commit_is_the_tree_git_itself_would_write(
        tmp_path: Path, steps: list[tuple[str, str | None]]) -> None:
    """Folders nested, emptied, names sorting around "/" ("a-b.md" < "a.md" < "a/"):
    libgit2 reading each commit's tree and writing it back gets the same id, every
    commit's files are exactly the documents after its change, and git fsck agrees."""
    home = tmp_path / str(len(list(tmp_path.iterdir())))
    history = History(home / "history")
    current: dict[str, str] = {}
    expected: list[dict[str, str]] = []
    with Store(home / "memory", exclusive=True, history=history) as store:
        for path, text in steps:
            if text is None:
                if path in current:
                    store.forget(GLOBAL, path, revision_of(current.pop(path).encode()), ALICE)
                    expected.append(dict(current))
                continue
            if any(other.startswith(path.removesuffix(".md") + "/") or
                   path.startswith(other.removesuffix(".md") + "/") for other in current):
                continue  # never a file and a folder of one name: the store refuses it
            before = current.get(path)
            store.upsert(GLOBAL, path, text, ABSENT if before is None
                         else revision_of(before.encode()), ALICE)
            current[path] = text
            expected.append(dict(current))
        history.flush()
        git_dir = home / "history" / "global.git"
        if not expected:  # nothing written: no history made
            history.close()
            return
        repo = pygit2.Repository(str(git_dir))
        commits = list(repo.walk(repo.head.target, pygit2.enums.SortMode.TOPOLOGICAL
                                 | pygit2.enums.SortMode.REVERSE))
        assert len(commits) == len(expected)
        for commit, files in zip(commits, expected, strict=True):
            index = pygit2.Index()
            index.read_tree(commit.tree)
            assert index.write_tree(repo) == commit.tree.id
            assert {entry.path: repo[entry.id].data.decode() for entry in index} == files
        history.close()
    _fsck(git_dir)


def test_many_batches_stay_a_few_packs_and_every_version_stays_readable(
        tmp_path: Path) -> None:
    """Each pause in the writes is a batch and a pack; past `PACKS_MAX` the smallest are
    merged (with deltas), and every version written is still read back."""
    history = History(tmp_path / "history")
    written: list[tuple[str, str]] = []
    with Store(tmp_path / "memory", exclusive=True, history=history) as store:
        revisions: dict[str, str] = {}
        for batch in range(PACKS_MAX * 3):
            for n in range(3):
                path = f"notes/{n}.md"
                text = f"batch {batch} note {n}\n" * (1 + batch)
                revisions[path] = store.upsert(GLOBAL, path, text,
                                               revisions.get(path, ABSENT), ALICE)["revision"]
                written.append((path, revisions[path]))
            history.flush()  # a batch of its own
        packs = list((tmp_path / "history" / "global.git" / "objects" / "pack").glob("*.pack"))
        assert len(packs) <= PACKS_MAX + 1
        log = store.log(GLOBAL, limit=10_000)["changes"]
        assert [(c["path"], c["revision"]) for c in log] == written[::-1]
        for path, revision in written:
            assert revision_of(store.version(GLOBAL, path, revision)) == revision
        history.close()
    _fsck(tmp_path / "history" / "global.git")
