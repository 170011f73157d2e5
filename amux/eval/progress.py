"""Progress of a live evaluation, which runs for minutes: a rich bar on a terminal, plain
lines otherwise (a log, a pipe, a test's buffer).

Both show the same things: the scenario and sample under way, each sample's category
with the flags that fired, the samples done and the time since the run began. The bar
lives only while the samples run, so the summary (standard output, `amux.eval.live`)
is never printed across it, and standard output is never redirected into it.
"""

from __future__ import annotations

import time
from typing import TextIO

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
from rich.progress import Progress as Bar


def elapsed(seconds: float) -> str:
    """`1:02:03` or `2:03`: minutes and seconds, hours when there are any."""
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


class Progress:
    """Plain lines on `stream`, one when a sample starts and one when it ends."""

    def __init__(self, stream: TextIO, total: int) -> None:
        self.stream, self.total = stream, total
        self.started = time.monotonic()
        self.finished = 0

    def begin(self, scenario: str, number: int, samples: int) -> None:
        self._line(f"  {scenario} {number}/{samples} ... ({self._where()})")

    def end(self, scenario: str, number: int, samples: int, label: str,
            flags: dict[str, list[str]]) -> None:
        self.finished += 1
        self._line(_outcome(f"  {scenario} {number}/{samples}: {label} ({self._where()})",
                            flags))

    def close(self) -> None:
        """Nothing to tidy for plain lines."""

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def _where(self) -> str:
        return (f"{self.finished} of {self.total} samples done, "
                f"{elapsed(time.monotonic() - self.started)} elapsed")

    def _line(self, text: str) -> None:
        print(text, file=self.stream, flush=True)


class BarProgress(Progress):
    """A rich bar (scenario, sample, samples done, elapsed) with each result above it."""

    def __init__(self, stream: TextIO, total: int) -> None:
        super().__init__(stream, total)
        self.bar = Bar(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                       TextColumn("samples"), TimeElapsedColumn(),
                       console=Console(file=stream), transient=True,
                       redirect_stdout=False, redirect_stderr=False)
        self.task = self.bar.add_task("starting", total=total)
        self.bar.start()

    def begin(self, scenario: str, number: int, samples: int) -> None:
        self.bar.update(self.task, description=escape(f"{scenario} {number}/{samples}"))

    def end(self, scenario: str, number: int, samples: int, label: str,
            flags: dict[str, list[str]]) -> None:
        self.finished += 1
        self.bar.advance(self.task)
        self._line(_outcome(f"  {scenario} {number}/{samples}: {label}", flags))

    def close(self) -> None:
        self.bar.stop()

    def _line(self, text: str) -> None:
        self.bar.console.print(escape(text), highlight=False)


def _outcome(head: str, flags: dict[str, list[str]]) -> str:
    """A sample's result line, then one indented line per flag's evidence."""
    return head + "".join(f"\n      {category}: {evidence}"
                          for category, items in flags.items() for evidence in items)


def progress_for(stream: TextIO, total: int) -> Progress:
    """The bar when `stream` is a terminal, plain lines otherwise."""
    isatty = getattr(stream, "isatty", None)
    return BarProgress(stream, total) if isatty is not None and isatty() else \
        Progress(stream, total)
