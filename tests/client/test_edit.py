"""`amux memory edit`: saved conditionally; a concurrent change keeps the edit and says so."""

from __future__ import annotations

import sys
from pathlib import Path

from tests.hubproc import HubProcess, amux


def _editor(tmp_path: Path, body: str) -> str:
    script = tmp_path / "editor.py"
    script.write_text("import sys\nfrom pathlib import Path\ndraft = Path(sys.argv[1])\n" + body)
    return f"{sys.executable} {script}"


def test_edit_creates_changes_and_leaves_unchanged(memory_hub: HubProcess,
                                                   tmp_path: Path) -> None:
    home = memory_hub.home
    append = _editor(tmp_path, "draft.write_text(draft.read_text() + 'added\\n')\n")
    code, created, _ = amux(home, "memory", "edit", "notes/new.md", env={"EDITOR": append})
    assert code == 0 and created["created"] is True
    code, changed, _ = amux(home, "memory", "edit", "notes/new.md", env={"VISUAL": append})
    assert code == 0 and changed["created"] is False
    assert amux(home, "memory", "show", "notes/new.md")[1]["content"] == "added\nadded\n"
    code, same, _ = amux(home, "memory", "edit", "notes/new.md",
                         env={"EDITOR": _editor(tmp_path, "pass\n")})
    assert code == 0 and same["unchanged"] is True


def test_a_concurrent_change_is_never_overwritten(memory_hub: HubProcess,
                                                  tmp_path: Path) -> None:
    home = memory_hub.home
    amux(home, "memory", "upsert", "a.md", "--expected-revision", "absent", stdin="base\n")
    document = home / "memory" / "global" / "a.md"
    racing = _editor(tmp_path, f"Path({str(document)!r}).write_text('theirs\\n')\n"
                               "draft.write_text('mine\\n')\n")
    code, out, err = amux(home, "memory", "edit", "a.md", env={"EDITOR": racing})
    assert (code, out["error"]["code"]) == (3, "revision_conflict")
    assert document.read_text() == "theirs\n"
    assert Path(out["error"]["edit_file"]).read_text() == "mine\n"
    assert Path(out["error"]["current_file"]).read_text() == "theirs\n"
    assert "nothing was overwritten" in err
    for kept in (out["error"]["edit_file"], out["error"]["current_file"]):
        Path(kept).unlink()
