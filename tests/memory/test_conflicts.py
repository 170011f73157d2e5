"""A sync's conflict copy is named from its original and known back from its name alone
(`amux.memory.conflicts`: the sync writes it, the doctor and the memory page read it)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from amux.memory.conflicts import copy_path, original_of
from amux.memory.revision import revision_of

SEGMENT = st.from_regex(r"[a-zA-Z0-9_][a-zA-Z0-9_. -]{0,20}", fullmatch=True)


@given(st.lists(SEGMENT, min_size=0, max_size=3), SEGMENT, st.binary(max_size=64))
def test_a_copy_names_its_original(folders: list[str], name: str, data: bytes) -> None:
    path = "/".join([*folders, name + ".md"])
    copy = copy_path(path, revision_of(data))
    assert copy != path and original_of(copy) == path
    assert original_of(path) is None or ".sync-conflict-" in path


def test_other_paths_are_not_copies() -> None:
    for path in ("a.md", "a.sync-conflict-.md", "a.sync-conflict-0123456789AB.md",
                 "a.sync-conflict-0123456789ab.txt", ".sync-conflict-0123456789ab.md",
                 "a.sync-conflict-0123456789abc.md", "dir/a.sync-conflict-xyz456789abc.md",
                 "dir/.sync-conflict-0123456789ab.md"):
        assert original_of(path) is None, path
    assert original_of("dir/a.sync-conflict-0123456789ab.md") == "dir/a.md"
