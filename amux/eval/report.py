"""Pass rates with counts per scenario and category: the printed table and the JSON report.

The JSON report (`--json FILE`, version 1) holds the run's settings, the context-window
check, per scenario the pass count and category counts, and per sample its category,
every flag with its evidence and each turn's record (prompt, answer, memory calls, writes
outside memory, store changes, prompt token counts).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from amux.eval.classify import CATEGORIES, LABELS, Outcome
from amux.eval.evidence import Turn
from amux.eval.scenarios import Scenario

VERSION = 1


@dataclass
class Sample:
    number: int
    outcome: Outcome
    turns: list[Turn]
    seconds: float

    def to_json(self) -> dict[str, Any]:
        return {"sample": self.number, "category": self.outcome.category,
                "passed": self.outcome.passed, "flags": self.outcome.flags,
                "seconds": round(self.seconds, 2),
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

    def to_json(self) -> dict[str, Any]:
        total = len(self.samples)
        return {"scenario": self.scenario.name, "title": self.scenario.title,
                "passed": self.passed, "samples": total,
                "pass_rate": round(self.passed / total, 4) if total else None,
                "categories": self.counts(),
                "results": [sample.to_json() for sample in self.samples]}


def totals(results: list[Result]) -> dict[str, Any]:
    counts = dict.fromkeys(CATEGORIES, 0)
    for result in results:
        for category, count in result.counts().items():
            counts[category] += count
    total = sum(len(result.samples) for result in results)
    passed = sum(result.passed for result in results)
    return {"passed": passed, "samples": total,
            "pass_rate": round(passed / total, 4) if total else None, "categories": counts}


def _percent(passed: int, total: int) -> str:
    return f"{100 * passed / total:.0f}%" if total else "-"


def print_table(results: list[Result], out: TextIO) -> None:
    """One row per scenario: passes, the rate, then the count of every category."""
    columns = ["correct", *(c for c in CATEGORIES
                            if c != "correct" and any(r.counts()[c] for r in results))]
    headers = ["scenario", "pass", "rate", *(LABELS[c] for c in columns)]
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
    widths = [max(len(row[i]) for row in [headers, *rows]) for i in range(len(headers))]
    for row in [headers, *rows]:
        cells = [cell.ljust(widths[0]) if i == 0 else cell.rjust(widths[i])
                 for i, cell in enumerate(row)]
        print("  ".join(cells).rstrip(), file=out)


def write_json(path: Path, report: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n")
