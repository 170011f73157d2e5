"""Reading a file someone else may have put there: regular files only, never blocking,
never more than the limit, links followed (the reader is the user whose files they are)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from amux.launcher import readfile


def test_a_regular_file_and_a_link_to_one_are_read_and_an_absent_one_is_none(
        tmp_path: Path) -> None:
    (tmp_path / "f").write_bytes(b"text\n")
    (tmp_path / "link").symlink_to(tmp_path / "f")
    assert readfile.read_bytes(str(tmp_path / "f")) == b"text\n"
    assert readfile.read_bytes(str(tmp_path / "link")) == b"text\n"
    assert readfile.read_bytes(str(tmp_path / "absent")) is None
    with pytest.raises(OSError):
        readfile.read_bytes(str(tmp_path / "link"), follow=False)


@pytest.mark.timeout(20)
def test_a_fifo_is_refused_at_once(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(readfile.Unreadable, match="is a FIFO, not a regular file"):
        readfile.read_bytes(str(tmp_path / "fifo"))
    assert readfile.first_line(str(tmp_path / "fifo"), 100) == ""


def test_a_directory_is_said_as_open_says_it(tmp_path: Path) -> None:
    with pytest.raises(IsADirectoryError):
        readfile.read_bytes(str(tmp_path))


def test_a_huge_sparse_file_is_refused_without_reading_it(tmp_path: Path) -> None:
    huge = tmp_path / "GEMINI.md"
    with open(huge, "wb") as handle:
        handle.truncate(400 << 20)
    with pytest.raises(readfile.Unreadable, match="larger than 4 MiB"):
        readfile.read_bytes(str(huge))
    exact = tmp_path / "exact"
    exact.write_bytes(b"x" * 10)
    assert readfile.read_bytes(str(exact), limit=10) == b"x" * 10
    with pytest.raises(readfile.Unreadable):
        readfile.read_bytes(str(exact), limit=9)
