"""Snapshots of a run root: what a session's file changes are read from."""

from __future__ import annotations

from pathlib import Path

from amux.eval.workspace import changed, snapshot


def test_a_snapshot_leaves_out_git_and_installed_packages(tmp_path: Path) -> None:
    note = tmp_path / "home" / "notes.md"
    note.parent.mkdir(parents=True)
    note.write_text("port 6543\n")
    before = snapshot(tmp_path)
    for relative in ("work/.git/HEAD", "home/.config/opencode/node_modules/pkg/README.md"):
        path = tmp_path / relative
        path.parent.mkdir(parents=True)
        path.write_text("tabs\n")
    note.write_text("port 6543, tabs\n")
    after = snapshot(tmp_path)
    assert list(after) == ["home/notes.md"]
    assert changed(before, after) == {"home/notes.md": after["home/notes.md"]}
    assert after["home/notes.md"].text == "port 6543, tabs\n"
