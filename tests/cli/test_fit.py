"""Tables for people at the terminal's width (issue 37): cut in the middle, headers whole."""

from __future__ import annotations

import io

import pytest
from rich import box
from rich.console import Console

from amux.cli.fit import CUT, TRIM, WRAP, Col, fit_widths, middle, table

PATH = "projects/github.com-acme-hub/decisions.md"


@pytest.mark.parametrize(("text", "width", "shared", "shown"), [
    (PATH, 80, 0, PATH),
    (PATH, 22, 25, "proje…hub/decisions.md"),  # all after the shared start
    (PATH, 22, 0, "proj…-hub/decisions.md"),
    ("abcdefghij", 7, 10, "ab…ghij"),  # all shared: a third of the start
    ("部署文档很长的名字.md", 9, 0, "部…字.md"),  # cells, not characters: 2 each
    ("abc", 1, 0, "…"),
])
def test_middle_keeps_the_start_and_the_end_that_tells_rows_apart(
        text: str, width: int, shared: int, shown: str) -> None:
    assert middle(text, width, shared) == shown


def test_widths_drop_optional_columns_in_order_then_shrink_to_floors() -> None:
    def overhead(count: int) -> int:
        return 2 * count

    natural, roomy, floors = [40, 10, 20, 30], [16, 10, 20, 16], [4, 10, 20, 2]
    assert fit_widths(natural, roomy, floors, [0, 0, 0, 0], overhead, 200) == natural
    # the last column shrinks first, to its roomy width; then the first
    assert fit_widths(natural, roomy, floors, [0, 0, 2, 1], overhead, 90) == [36, 10, 20, 16]
    assert fit_widths(natural, roomy, floors, [0, 0, 2, 1], overhead, 60) == [24, 10, 20, None]
    assert fit_widths(natural, roomy, floors, [0, 0, 2, 1], overhead, 30) == [16, 10, None, None]
    assert fit_widths(natural, roomy, floors, [0, 0, 0, 0], overhead, 10) == [4, 10, 20, 2]


@pytest.mark.parametrize("width", [60, 61, 67, 72, 80, 99, 120])
def test_no_header_word_breaks_and_no_line_overflows(width: int) -> None:
    console = Console(width=width, record=True, markup=False, file=io.StringIO())
    columns = (Col("id"), Col("memory binding", TRIM, optional=2), Col("where it ran", CUT),
               Col("started", optional=1), Col("what it said", WRAP))
    rows = [("20261202-071150-8be1d4", "principal:" + "ab" * 12 + "…",
             "/home/someone/projects/a-long-project-name/with/a/deep/folder",
             "2026-12-02T07:11:50Z", "a long message " * 6)]
    console.print(table(console, columns, rows, box=box.SIMPLE_HEAD, pad_edge=False))
    lines = console.export_text().splitlines()
    assert max(len(line) for line in lines) <= width
    rule = next(i for i, line in enumerate(lines) if line.strip().startswith("─"))
    words = {word for col in columns for word in col.header.split()}
    assert set(" ".join(lines[:rule]).split()) <= words
    assert "20261202-071150-8be1d4" in lines[rule + 1]
