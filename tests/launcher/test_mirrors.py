"""A plan's mirrors (Gemini CLI's home): made from the source as links, and after the agent
what it created or replaced there goes back into the source; nothing it wrote is lost."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from amux.adapters.base import PlanFile, PlanMirror
from amux.errors import AmuxError
from amux.launcher import mirrors


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A user's home with `.gemini` (settings, sessions) and something else."""
    home = tmp_path / "home"
    (home / ".gemini" / "tmp").mkdir(parents=True)
    (home / ".gemini" / "settings.json").write_text("{}")
    (home / ".gemini" / "projects.json").write_text('{"projects": {}}')
    (home / "notes").mkdir()
    (home / ".env").write_text("X=1\n")
    return home


def two(home: Path, tmp_path: Path) -> tuple[PlanMirror, PlanMirror]:
    mirror = tmp_path / "session" / "gemini-home"
    mirror.parent.mkdir(exist_ok=True)
    return (PlanMirror(str(mirror), str(home), (".gemini",)),
            PlanMirror(str(mirror / ".gemini"), str(home / ".gemini"), ("settings.json",)))


def test_a_mirror_links_every_entry_but_its_own(home: Path, tmp_path: Path) -> None:
    outer, inner = two(home, tmp_path)
    assert mirrors.make((outer, inner)) == []
    top, dot = Path(outer.path), Path(inner.path)
    assert sorted(os.listdir(top)) == [".env", ".gemini", "notes"]
    assert os.readlink(top / "notes") == str(home / "notes")
    assert not (top / ".gemini").is_symlink() and not (dot / "settings.json").exists()
    assert os.readlink(dot / "tmp") == str(home / ".gemini" / "tmp")
    assert top.stat().st_mode & 0o777 == 0o700


def test_what_the_agent_writes_goes_back_and_the_mirror_goes(home: Path,
                                                              tmp_path: Path) -> None:
    outer, inner = two(home, tmp_path)
    mirrors.make((outer, inner))
    dot = Path(inner.path)
    (dot / "settings.json").write_text('{"ours": 1}')  # the plan's own file
    (dot / "tmp" / "chat.jsonl").write_text("through the link\n")
    replaced = dot / "projects.json.tmp"  # written aside and renamed over the link
    replaced.write_text('{"projects": {"/w": "w"}}')
    os.replace(replaced, dot / "projects.json")
    (dot / "installation_id").write_text("new")  # created in the mirror
    (dot / "history" / "w").mkdir(parents=True)  # a directory created in the mirror
    assert mirrors.restore((outer, inner)) == []
    assert not Path(outer.path).exists()
    real = home / ".gemini"
    assert (real / "settings.json").read_text() == "{}"  # never the plan's own
    assert (real / "tmp" / "chat.jsonl").read_text() == "through the link\n"
    assert (real / "projects.json").read_text() == '{"projects": {"/w": "w"}}'
    assert (real / "installation_id").read_text() == "new"
    assert (real / "history" / "w").is_dir()


def test_a_missing_source_is_made_when_the_agent_kept_something(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    outer, inner = two(home, tmp_path)
    mirrors.make((outer, inner))
    (Path(inner.path) / "tmp").mkdir()
    mirrors.restore((outer, inner))
    assert (home / ".gemini" / "tmp").is_dir()
    assert (home / ".gemini").stat().st_mode & 0o777 == 0o700


def test_what_cannot_go_back_stays_with_a_warning(home: Path, tmp_path: Path) -> None:
    outer, inner = two(home, tmp_path)
    mirrors.make((outer, inner))
    (home / ".gemini" / "history").mkdir()  # appeared meanwhile, beside the agent's own
    (Path(inner.path) / "history").mkdir()
    (Path(inner.path) / "history" / "kept").write_text("x")
    [warning] = mirrors.restore((outer, inner))
    assert "history" in warning and "move them by hand" in warning
    assert (Path(inner.path) / "history" / "kept").read_text() == "x"  # nothing lost
    # The next launch restores the leftover first, and sets aside what it still cannot move.
    again = mirrors.make((outer, inner))
    assert len(again) == 2 and "history" in again[0] and "is now in" in again[1]
    aside = Path(again[1].rpartition(" ")[2])
    assert (aside / ".gemini" / "history" / "kept").read_text() == "x"
    assert os.readlink(Path(inner.path) / "history") == str(home / ".gemini" / "history")


def test_a_leftover_mirror_is_restored_before_a_new_one_is_made(home: Path,
                                                                 tmp_path: Path) -> None:
    outer, inner = two(home, tmp_path)
    mirrors.make((outer, inner))
    (Path(inner.path) / "state.json").write_text("left by a killed launch")
    assert mirrors.make((outer, inner)) == []
    assert (home / ".gemini" / "state.json").read_text() == "left by a killed launch"
    assert os.readlink(Path(inner.path) / "state.json") == str(home / ".gemini" / "state.json")


def test_a_mirror_that_cannot_be_made_is_a_clear_error(home: Path, tmp_path: Path) -> None:
    mirror = PlanMirror(str(tmp_path / "absent" / "gemini-home"), str(home))
    with pytest.raises(AmuxError, match=r"cannot make .*gemini-home"):
        mirrors.make((mirror,))


def test_a_file_of_the_plan_the_agent_changed_is_kept_and_named(home: Path,
                                                                tmp_path: Path) -> None:
    """Gemini's `/settings` rewrites the mirror's settings.json, which amux writes afresh for
    each launch: the change is set aside beside the mirrors, named, never lost."""
    outer, inner = two(home, tmp_path)
    mirrors.make((outer, inner))
    ours = PlanFile(f"{inner.path}/settings.json", '{"ours": 1}')
    (Path(inner.path) / "settings.json").write_text(ours.text)
    assert mirrors.restore((outer, inner), (ours,)) == []  # unchanged: nothing said
    mirrors.make((outer, inner))
    (Path(inner.path) / "settings.json").write_text('{"ours": 1, "theme": "dark"}')
    [note] = mirrors.restore((outer, inner), (ours,))
    kept = Path(note.rpartition(" ")[2])
    assert kept.parent == Path(outer.path).parent and kept.name.startswith("settings.json.")
    assert kept.read_text() == '{"ours": 1, "theme": "dark"}'
    assert "not in " + str(home / ".gemini" / "settings.json") in note
    assert (home / ".gemini" / "settings.json").read_text() == "{}"
    assert not Path(outer.path).exists()


@pytest.mark.timeout(20)
def test_a_fifo_the_agent_left_for_a_plan_file_does_not_block_the_restore(
        home: Path, tmp_path: Path) -> None:
    """The agent replaced the mirror's settings.json with a FIFO: restoring reads it
    without blocking (it is not a file the plan wrote), and removes the mirror."""
    outer, inner = two(home, tmp_path)
    mirrors.make((outer, inner))
    ours = PlanFile(f"{inner.path}/settings.json", '{"ours": 1}')
    os.mkfifo(ours.path)
    assert mirrors.restore((outer, inner), (ours,)) == []
    assert not Path(outer.path).exists()
