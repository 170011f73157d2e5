"""A property of `amux memory sync` (amux.hub.sync), in process with real stores, real
histories and real git: for any edits on two sides, after a, b, a both sides hold the same
documents, and every text either side was told was saved is in both sides' history."""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from amux.errors import RevisionConflict
from amux.hub.sync import Remotes, sync
from amux.memory.history import History
from amux.memory.revision import ABSENT, revision_of
from amux.memory.scope import GLOBAL
from amux.memory.store import Store
from amux.memory.versions import Author

PATHS = ("a.md", "b.md", "c.md")
LINES = st.lists(st.sampled_from(["alpha\n", "beta\n", "gamma\n", "delta\n", "one\n"]),
                 min_size=1, max_size=5)
EDIT = st.tuples(st.sampled_from(PATHS), st.one_of(st.none(), LINES.map("".join)))
OWNER = Author("owner", None, None)


class Home:
    def __init__(self, home: Path, bare: Path) -> None:
        self.history = History(home / "history")
        self.store = Store(home / "memory", exclusive=True, history=self.history)
        self.remotes = Remotes(home)
        self.remotes.add(GLOBAL, "origin", str(bare))
        self.said: dict[str, str] = {}
        """path → the revision of each text this side was told was saved, last one kept."""

    def apply(self, path: str, text: str | None) -> None:
        current = self.current().get(path)
        expected = ABSENT if current is None else revision_of(current)
        try:
            if text is None:
                self.store.forget(GLOBAL, path, expected, OWNER)
            else:
                self.said[path] = self.store.upsert(GLOBAL, path, text, expected,
                                                    OWNER)["revision"]
        except RevisionConflict:
            raise AssertionError("nothing else writes here") from None

    def current(self) -> dict[str, bytes]:
        root = self.store.root / "global"
        return {str(file.relative_to(root)): file.read_bytes() for file in root.rglob("*.md")
                } if root.exists() else {}

    def sync(self) -> None:
        report = sync(self.store, GLOBAL, self.remotes, None, False, OWNER)
        assert not report["refused"] and not report["changed_meanwhile"], report

    def close(self) -> None:
        self.store.close()
        self.history.close()


@pytest.mark.timeout(600)
@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(start=st.lists(EDIT, max_size=4), left=st.lists(EDIT, max_size=5),
       right=st.lists(EDIT, max_size=5))
def test_two_sides_converge_and_keep_every_acknowledged_text(
        start: list[tuple[str, str | None]], left: list[tuple[str, str | None]],
        right: list[tuple[str, str | None]]) -> None:
    with tempfile.TemporaryDirectory(prefix="amux-sync-prop-") as temp:
        work = Path(temp)
        bare = work / "shared.git"
        subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True, timeout=30)
        a, b = Home(work / "a", bare), Home(work / "b", bare)
        try:
            for path, text in start:
                a.apply(path, text)
            a.sync()
            b.sync()
            for path, text in left:
                a.apply(path, text)
            for path, text in right:
                b.apply(path, text)
            a.sync()
            b.sync()
            a.sync()
            assert a.current() == b.current()
            for side in (a, b):
                for other in (a, b):
                    for path, revision in other.said.items():
                        assert side.history.version(GLOBAL, path, revision) is not None, (
                            path, revision)
            base: dict[str, str | None] = {}
            for path, text in start:
                base[path] = text
            for path in PATHS:  # an edit on either side is never lost to a deletion
                finals = [dict(edits).get(path, base.get(path)) for edits in (left, right)]
                if any(final is not None and final != base.get(path) for final in finals):
                    assert path in a.current(), (path, finals)
        finally:
            a.close()
            b.close()
