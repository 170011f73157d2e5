"""Tables for people that fit the terminal (`--pretty`), down to 60 columns.

rich left alone squeezes every column that may wrap: at 80 columns `amux sessions list`
broke its header into `memor/y/bindi/ng`, and `amux memory list` cut every project path
to the same start. Here each column says how it may shrink (`Col.fit`): a `WHOLE` one
never does (ids, dates, revisions, numbers); a `CUT` one (a path, a directory) loses its
middle, keeping its start and the end that tells rows apart (`middle`); a `TRIM` one (who, a
binding) loses its end; a `WRAP` one (a snippet, a message) wraps at spaces. When the
table does not fit with those at `ROOMY` cells, its `optional` columns go; then columns
shrink, but never below their header's longest word, so a header wraps between words,
never inside one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, NamedTuple

from rich.cells import cell_len
from rich.console import Console
from rich.measure import Measurement
from rich.table import Column, Table

WHOLE, CUT, TRIM, WRAP = "whole", "cut", "trim", "wrap"
ROOMY = 16
"""Cells of a shrinking column worth an optional column (or its widest cell)."""
ELLIPSIS = "…"
HEAD = 4
"""Cells of its start a `CUT` cell keeps at least (fewer only in a column under 13)."""


class Col(NamedTuple):
    """One column: its header, how it may shrink, and whether it may go when the table
    does not fit (0: never; else the lowest goes first)."""

    header: str
    fit: str = WHOLE
    optional: int = 0


def table(console: Console, columns: Sequence[Col], rows: Iterable[Sequence[str]],
          **style: Any) -> Table:
    """A rich `Table(**style)` of `rows` that fits `console.width` (see the module)."""
    cells = [list(row) for row in rows]
    widest = [max((_widest(row[i]) for row in cells), default=0) for i in range(len(columns))]
    natural = [max(cell_len(col.header), cell) for col, cell in zip(columns, widest,
                                                                     strict=True)]
    words = [max(cell_len(word) for word in col.header.split()) for col in columns]
    hard = [max(word, cell if col.fit == WHOLE else 1)
            for col, cell, word in zip(columns, widest, words, strict=True)]
    roomy = [max(floor, min(cell, ROOMY)) for floor, cell in zip(hard, widest, strict=True)]

    def overhead(count: int) -> int:  # borders, separators and padding of `count` columns
        probe = Table(*(Column(width=1) for _ in range(count)), **style)
        return Measurement.get(console, console.options, probe).maximum - count

    widths = fit_widths(natural, roomy, hard, [col.optional for col in columns], overhead,
                        console.width)
    kept = [i for i, width in enumerate(widths) if width is not None]
    made = Table(*(Column(columns[i].header, width=widths[i],
                          overflow="fold" if columns[i].fit == WRAP else "ellipsis")
                   for i in kept), **style)
    shared = [_shared([row[i] for row in cells]) for i in range(len(columns))]
    for row in cells:
        made.add_row(*(_shortened(row[i], widths[i] or 0, columns[i].fit, shared[i])
                       for i in kept))
    return made


def fit_widths(natural: Sequence[int], roomy: Sequence[int], floors: Sequence[int],
               optional: Sequence[int], overhead: Callable[[int], int],
               width: int) -> list[int | None]:
    """Each column's width (None: left out) for a table at most `width` wide: `natural`
    when that fits. Else the optional columns go (`optional` 1 first, then 2...) while
    the table does not fit at `roomy` widths; the columns shrink to `roomy`, the last
    first (the first ones say what a row is: a path, an id); then the widest above its
    floor, a cell at a time, until the table fits (or every column is at its floor)."""
    kept = list(range(len(natural)))
    droppable = sorted((i for i in kept if optional[i]), key=optional.__getitem__)
    while droppable and sum(roomy[i] for i in kept) + overhead(len(kept)) > width:
        kept.remove(droppable.pop(0))
    widths = {i: natural[i] for i in kept}
    excess = sum(widths.values()) + overhead(len(kept)) - width
    for i in reversed(kept):
        cut = max(0, min(excess, widths[i] - roomy[i]))
        widths[i] -= cut
        excess -= cut
    while excess > 0:
        shrinkable = [i for i in kept if widths[i] > floors[i]]
        if not shrinkable:
            break
        widths[max(shrinkable, key=widths.__getitem__)] -= 1
        excess -= 1
    return [widths.get(i) for i in range(len(natural))]


def _shortened(text: str, width: int, fit: str, shared: int) -> str:
    """A `CUT` or `TRIM` cell in at most `width` cells; any other as it is (rich wraps)."""
    if fit == CUT:
        return middle(text, width, shared)
    if fit == TRIM and cell_len(text) > width:
        return _start(text, width - 1) + ELLIPSIS if width > 1 else ELLIPSIS[:width]
    return text


def middle(text: str, width: int, shared: int = 0) -> str:
    """`text` in at most `width` cells: whole, or its start, "…" and its end. The end
    tells rows apart: it keeps what follows the `shared` start of the column's cells
    (`projects/github.com-acme-` of every project: `proje…hub/decisions.md`), else two
    thirds, but at least `HEAD` cells of the start stay."""
    if cell_len(text) <= width:
        return text
    if width <= 1:
        return ELLIPSIS[:width]
    keep = width - 1
    head = max(min(keep // 3, keep - cell_len(text[shared:])), min(HEAD, keep // 3))
    return _start(text, head) + ELLIPSIS + _start(text[::-1], keep - head)[::-1]


def _start(text: str, width: int) -> str:
    """The longest start of `text` in at most `width` cells."""
    used = 0
    for index, character in enumerate(text):
        used += cell_len(character)
        if used > width:
            return text[:index]
    return text


def _shared(cells: list[str]) -> int:
    """How many characters all `cells` start with (0 for fewer than two)."""
    if len(cells) < 2:
        return 0
    first, last = min(cells), max(cells)  # the others lie between: they share it too
    return next((i for i, (a, b) in enumerate(zip(first, last, strict=False)) if a != b),
                min(len(first), len(last)))


def _widest(cell: str) -> int:
    return max((cell_len(line) for line in cell.splitlines()), default=0)
