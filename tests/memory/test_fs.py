"""File primitives: the one temp-and-replace helper for files outside the store."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from amux.durable import TEMP_PREFIX, write_file_atomic
from amux.memory import fs


def test_write_file_atomic_replaces_with_private_mode(tmp_path: Path) -> None:
    target = tmp_path / "config.toml"
    target.write_text("old")
    target.chmod(0o644)
    write_file_atomic(target, b"new = true\n")
    assert target.read_bytes() == b"new = true\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["config.toml"]  # no temp left behind
    write_file_atomic(tmp_path / "state.json", b"{}", mode=0o640)
    assert stat.S_IMODE((tmp_path / "state.json").stat().st_mode) == 0o640
    assert not any(p.name.startswith(TEMP_PREFIX) for p in tmp_path.iterdir())


def _open_fds() -> set[str]:
    """This process's descriptors. Compared as sets: a worker that also drives a browser
    (tests/ui) has threads opening and closing their own meanwhile."""
    return set(os.listdir("/proc/self/fd"))


def _deep_tree(root: Path, depth: int) -> list[str]:
    """A chain `d/d/…` `depth` levels deep with a document and a side branch at each level."""
    expected = []
    directory = root
    prefix = ""
    for level in range(depth):
        (directory / f"n{level}.md").write_text(f"level {level}\n")
        side = directory / "side"
        side.mkdir()
        (side / "s.md").write_text("side\n")
        expected += [f"{prefix}d/", f"{prefix}n{level}.md", f"{prefix}side/s.md"]
        directory = directory / "d"
        directory.mkdir()
        prefix += "d/"
    (directory / "leaf.md").write_text("leaf\n")
    expected.append(f"{prefix}leaf.md")
    return sorted(p for p in expected if not p.endswith("/"))


def _walk_paths(root: Path, watch: list[set[str]] | None = None) -> list[str]:
    base = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        paths = []
        for found in fs.TreeWalk(base):
            if watch is not None:
                watch.append(_open_fds())
            paths.append(found.path)
        return paths
    finally:
        os.close(base)


def test_a_deep_tree_is_walked_whole_with_bounded_descriptors(tmp_path: Path) -> None:
    expected = _deep_tree(tmp_path, 120)
    before = _open_fds()
    seen: list[set[str]] = []
    paths = _walk_paths(tmp_path, seen)
    assert sorted(paths) == expected
    assert paths == sorted(paths, key=lambda p: p.encode())  # bytewise order kept
    # the base, at most MAX_OPEN_DIRS of the walk's own, one transient for a reopen
    assert max(len(fds - before) for fds in seen) <= fs.MAX_OPEN_DIRS + 2
    assert _open_fds() - before == set()  # none of the walk's left open


def test_a_parked_directory_replaced_mid_walk_is_skipped_not_followed(tmp_path: Path) -> None:
    _deep_tree(tmp_path, 30)
    elsewhere = tmp_path.parent / (tmp_path.name + "-outside")
    elsewhere.mkdir()
    (elsewhere / "secret.md").write_text("not in the scope\n")
    base = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        paths = []
        for found in fs.TreeWalk(base):
            paths.append(found.path)
            if found.path == "d/" * 25 + "leaf.md" or found.path.endswith("d/" * 28 + "n28.md"):
                # level 2 is parked by now: swap it for a directory with other content
                victim = tmp_path / "d" / "d"
                victim.rename(tmp_path / "moved")
                (tmp_path / "d" / "d").mkdir()
                (tmp_path / "d" / "d" / "planted.md").write_text("planted\n")
    finally:
        os.close(base)
    assert not any("secret" in p or "planted" in p for p in paths)
    assert "n0.md" in paths  # the walk went on above the replaced directory


def test_tidy_makes_hand_added_entries_private_and_never_follows_symlinks(
    tmp_path: Path,
) -> None:
    root = tmp_path / "root"
    (root / "global" / "notes").mkdir(parents=True)
    (root / "global" / "notes").chmod(0o755)
    (root / "global" / "notes" / "a.md").write_text("a\n")
    (root / "global" / "notes" / "a.md").chmod(0o644)
    (root / "global" / (TEMP_PREFIX + "x")).write_text("partial")
    outside = tmp_path / "outside.md"
    outside.write_text("not ours\n")
    outside.chmod(0o644)
    (root / "global" / "link.md").symlink_to(outside)
    (root / "global" / "linkdir").symlink_to(tmp_path)
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        tidied = fs.tidy_tree(fd)
    finally:
        os.close(fd)
    assert (tidied.removed_temps, tidied.fixed_modes, tidied.unfixable) == (1, 3, 0)
    assert stat.S_IMODE((root / "global" / "notes").stat().st_mode) == 0o700
    assert stat.S_IMODE((root / "global" / "notes" / "a.md").stat().st_mode) == 0o600
    assert stat.S_IMODE(outside.stat().st_mode) == 0o644  # a symlink's target is not ours


def test_a_store_on_a_read_only_file_system_opens_and_counts_what_it_cannot_fix(
    tmp_path: Path,
) -> None:
    from amux.memory import GLOBAL, Store
    from tests.hostile import remount, small_tmpfs

    with small_tmpfs(tmp_path / "mnt") as mount:
        root = mount / "memory"
        (root / "global").mkdir(parents=True)
        (root / "global" / "a.md").write_text("hello\n")
        (root / "global" / "a.md").chmod(0o644)
        (root / ".amux-root.lock").touch()
        remount(mount, read_only=True)
        with Store(root, exclusive=True) as store:
            assert store.tidied.unfixable >= 1
            assert store.get(GLOBAL, "a.md")["content"] == "hello\n"
