"""Pass rates with counts per scenario and category, and the rates beside them: the printed
tables and the JSON report.

Beside the pass rate, per scenario and overall, the rates of `RATES`: notes in the note
guide's format (samples whose written notes all conform), duplicates, relative dates
kept, and seed 004 §4.5's failure modes inverted, invented and wrong place (samples whose
flag fired) — each over the samples it applies to (`Outcome.judged`), so a sample can
count in several.

The JSON report (`--json FILE`, version 2) holds the run's settings, the context-window
check, per scenario (and in `totals`) the pass count, category counts and `rates` (each
`{label, count, of, rate}`), and per sample its category, every flag with its evidence,
the rates it was `judged` on, and each turn's record (prompt, answer, memory calls,
writes outside memory, store changes, prompt token counts). Version 2 added `rates` and
`judged`, with scenarios whose seeds follow the note guide and a correction carrying
"yesterday".
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from amux.eval.classify import CATEGORIES, LABELS, RATES, Outcome
from amux.eval.evidence import Turn
from amux.eval.scenarios import Scenario

VERSION = 2
CONFORMANT = "format"
"""The one rate that counts samples without its flag: notes in the guide's format."""
HEADERS = {rate: "notes in format" if rate == CONFORMANT else LABELS[rate] for rate in RATES}


@dataclass
class Sample:
    number: int
    outcome: Outcome
    turns: list[Turn]
    seconds: float

    def to_json(self) -> dict[str, Any]:
        return {"sample": self.number, "category": self.outcome.category,
                "passed": self.outcome.passed, "flags": self.outcome.flags,
                "judged": list(self.outcome.judged), "seconds": round(self.seconds, 2),
                "turns": [turn.to_json() for turn in self.turns]}


@dataclass
class Result:
    scenario: Scenario
    samples: list[Sample] = field(default_factory=list)

    @property
    def passed(self) -> int:
        return sum(sample.outcome.passed for sample in self.samples)

    def counts(self) -> dict[str, int]:
        counts = dict.fromkeys(CATEGORIES, 0)
        for sample in self.samples:
            counts[sample.outcome.category] += 1
        return counts

    def rates(self) -> dict[str, tuple[int, int]]:
        """(count, of) per rate: `_rates` of this scenario's samples."""
        return _rates([sample.outcome for sample in self.samples])

    def to_json(self) -> dict[str, Any]:
        total = len(self.samples)
        return {"scenario": self.scenario.name, "title": self.scenario.title,
                "passed": self.passed, "samples": total,
                "pass_rate": round(self.passed / total, 4) if total else None,
                "categories": self.counts(), "rates": _rates_json(self.rates()),
                "results": [sample.to_json() for sample in self.samples]}


def _rates(outcomes: list[Outcome]) -> dict[str, tuple[int, int]]:
    """Per rate, (samples counted, samples judged on it): for `CONFORMANT` the samples
    without its flag, for the others the samples whose flag fired."""
    found = {}
    for rate in RATES:
        judged = [outcome for outcome in outcomes if rate in outcome.judged]
        flagged = sum(rate in outcome.flags for outcome in judged)
        found[rate] = (len(judged) - flagged if rate == CONFORMANT else flagged, len(judged))
    return found


def _rates_json(rates: dict[str, tuple[int, int]]) -> dict[str, Any]:
    return {rate: {"label": HEADERS[rate], "count": count, "of": of,
                   "rate": round(count / of, 4) if of else None}
            for rate, (count, of) in rates.items()}


def totals(results: list[Result]) -> dict[str, Any]:
    counts = dict.fromkeys(CATEGORIES, 0)
    for result in results:
        for category, count in result.counts().items():
            counts[category] += count
    total = sum(len(result.samples) for result in results)
    passed = sum(result.passed for result in results)
    rates = _rates([sample.outcome for result in results for sample in result.samples])
    return {"passed": passed, "samples": total,
            "pass_rate": round(passed / total, 4) if total else None, "categories": counts,
            "rates": _rates_json(rates)}


def _percent(passed: int, total: int) -> str:
    return f"{100 * passed / total:.0f}%" if total else "-"


def _share(count: int, of: int) -> str:
    return f"{count}/{of} {_percent(count, of)}" if of else "-"


def print_table(results: list[Result], out: TextIO) -> None:
    """One row per scenario: passes, the rate, then the count of every category. Then
    the `RATES` per scenario, each as count/of and percent ("-" where none applies)."""
    columns = ["correct", *(c for c in CATEGORIES
                            if c != "correct" and any(r.counts()[c] for r in results))]
    rows = []
    for result in results:
        counts = result.counts()
        rows.append([result.scenario.name, f"{result.passed}/{len(result.samples)}",
                     _percent(result.passed, len(result.samples)),
                     *(str(counts[c]) for c in columns)])
    summary = totals(results)
    rows.append(["all", f"{summary['passed']}/{summary['samples']}",
                 _percent(summary["passed"], summary["samples"]),
                 *(str(summary["categories"][c]) for c in columns)])
    _print_rows(["scenario", "pass", "rate", *(LABELS[c] for c in columns)], rows, out)
    print("\nthe note guide and seed 004 §4.5's failure modes (samples, of those each "
          "applies to):", file=out)
    rows = [[result.scenario.name, *(_share(*result.rates()[rate]) for rate in RATES)]
            for result in results]
    overall = _rates([sample.outcome for result in results for sample in result.samples])
    rows.append(["all", *(_share(*overall[rate]) for rate in RATES)])
    _print_rows(["scenario", *(HEADERS[rate] for rate in RATES)], rows, out)


def _print_rows(headers: list[str], rows: list[list[str]], out: TextIO) -> None:
    widths = [max(len(row[i]) for row in [headers, *rows]) for i in range(len(headers))]
    for row in [headers, *rows]:
        cells = [cell.ljust(widths[0]) if i == 0 else cell.rjust(widths[i])
                 for i, cell in enumerate(row)]
        print("  ".join(cells).rstrip(), file=out)


def write_json(path: Path, report: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n")
