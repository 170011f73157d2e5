"""Progress of a live evaluation: plain lines off a terminal, a rich bar on one."""

from __future__ import annotations

import io
import re

from amux.eval.progress import BarProgress, Progress, elapsed, progress_for

FLAGS = {"fabricated": ["turn 1: stored 'port 6544' [not given]"]}


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_plain_lines_name_scenario_sample_and_elapsed_time() -> None:
    stream = io.StringIO()
    with progress_for(stream, 2) as progress:
        assert type(progress) is Progress
        progress.begin("remember", 1, 2)
        progress.end("remember", 1, 2, "fabricated", FLAGS)
    assert stream.getvalue().splitlines() == [
        "  remember 1/2 ... (0 of 2 samples done, 0:00 elapsed)",
        "  remember 1/2: fabricated (1 of 2 samples done, 0:00 elapsed)",
        "      fabricated: turn 1: stored 'port 6544' [not given]"]


def test_a_terminal_gets_the_bar_and_every_result_above_it() -> None:
    stream = Terminal()
    with progress_for(stream, 2) as progress:
        assert isinstance(progress, BarProgress)
        progress.begin("forget", 2, 2)
        progress.bar.refresh()
        shown = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", stream.getvalue())
        progress.end("forget", 2, 2, "correct", FLAGS)
    assert "forget 2/2" in shown and "0/2 samples" in shown and "0:00:00" in shown
    assert "  forget 2/2: correct" in stream.getvalue()
    assert "[not given]" in stream.getvalue()  # evidence is text, not rich markup
    assert not progress.bar.live.is_started  # stopped: the summary may follow


def test_elapsed() -> None:
    assert [elapsed(s) for s in (0, 59.9, 61, 3600, 3723)] == [
        "0:00", "0:59", "1:01", "1:00:00", "1:02:03"]
