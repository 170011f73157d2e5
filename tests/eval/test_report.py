"""The report's rates beside the pass rate: the guide's format (samples whose notes all
conform), duplicates, relative dates kept, inverted, invented and wrong place, each over
the samples it applies to."""

from __future__ import annotations

import io

from amux.eval.classify import Outcome
from amux.eval.report import Result, Sample, print_table, totals
from amux.eval.scenarios import BY_NAME

WROTE = ("format", "duplicate", "relative_date", "inverted", "fabricated", "wrong_place")


def result(name: str, *outcomes: Outcome) -> Result:
    return Result(BY_NAME[name], [Sample(n, o, [], 1.0) for n, o in enumerate(outcomes, 1)])


def test_rates_per_scenario_and_overall() -> None:
    correct = result(
        "correct",
        Outcome("correct", {}, WROTE),
        Outcome("correct", {"format": ["x"], "relative_date": ["y"]}, WROTE),
        Outcome("incomplete", {"incomplete": ["z"], "duplicate": ["d"]}, WROTE),
        Outcome("agent_error", {"agent_error": ["turn 1: timed out"]}, ()))
    ordinary = result("ordinary", Outcome("wrong_place", {"wrong_place": ["w"]},
                                          ("inverted", "fabricated", "wrong_place")))
    out = io.StringIO()
    print_table([correct, ordinary], out)
    assert out.getvalue().splitlines() == [
        "scenario  pass  rate  correct  agent error  wrong place  incomplete",
        "correct    2/4   50%        2            1            0           1",
        "ordinary   0/1    0%        0            0            1           0",
        "all        2/5   40%        2            1            1           1",
        "",
        "the note guide and seed 004 §4.5's failure modes (samples, of those each applies to):",
        "scenario  notes in format  duplicate  relative date kept  inverted  invented  "
        "wrong place",
        "correct           2/3 67%    1/3 33%             1/3 33%    0/3 0%    0/3 0%"
        "       0/3 0%",
        "ordinary                -          -                   -    0/1 0%    0/1 0%"
        "     1/1 100%",
        "all               2/3 67%    1/3 33%             1/3 33%    0/4 0%    0/4 0%"
        "      1/4 25%"]
    assert correct.to_json()["rates"]["format"] == {"label": "notes in format", "count": 2,
                                                    "of": 3, "rate": 0.6667}
    assert totals([correct, ordinary])["rates"]["relative_date"] == {
        "label": "relative date kept", "count": 1, "of": 3, "rate": 0.3333}
    assert totals([ordinary])["rates"]["duplicate"]["rate"] is None
