"""`amux memory doctor`: the readable report of the Hub's `/v1/memory/doctor` answer.

The checks run in the Hub (`amux.memory.health`, described in docs/store.md); the
client only asks and prints. `--json` prints the answer as it came; the default is
this plain-text report; `--pretty` is rich in the installed `amux`. Standard
library only, like the rest of `amux.client`.
"""

from __future__ import annotations

TYPE_CHECKING = False  # `typing` is not imported at run time: see connection.py
if TYPE_CHECKING:
    from typing import Any

_PLURAL = {"error": "errors", "warning": "warnings", "note": "notes"}


def _scope_line(result: dict[str, Any]) -> str:
    return (f"amux memory doctor: scope {result['scope']}: {result['documents']:,} documents, "
            f"{result['bytes']:,} bytes")


def _entry_line(entry: dict[str, Any] | None) -> str:
    if entry is None:
        return "MEMORY.md: none"
    line = f"MEMORY.md: {entry['bytes']:,} bytes, {entry['lines']} lines"
    if entry["detail_lines"] is not None:
        line += (f"; {entry['detail_lines']} of {entry['nonblank_lines']} non-blank lines "
                 "look like detail")
    return line


def _summary(result: dict[str, Any]) -> str:
    findings = result["findings"]
    total = sum(result["counts"].values())
    if not total:
        return "No findings."
    by_severity: dict[str, int] = {}
    for finding in findings:
        by_severity[finding["severity"]] = by_severity.get(finding["severity"], 0) + 1
    if result["truncated"]:
        return f"Findings: {total} ({len(findings)} shown, the most severe first)"
    parts = [f"{count} {_PLURAL.get(severity, severity) if count != 1 else severity}"
             for severity, count in by_severity.items()]
    return f"Findings: {total} ({', '.join(parts)})"


def report(result: dict[str, Any]) -> str:
    """The doctor's answer as a plain-text report for a person."""
    out = [_scope_line(result), _entry_line(result["entry"]), "", _summary(result)]
    category = None
    for finding in result["findings"]:
        if finding["category"] != category:
            category = finding["category"]
            out.append("")
            out.append(f"{category} ({result['counts'].get(category, 0)})")
        where = finding["path"] if finding["path"] is not None else "(scope)"
        out.append(f"  {finding['severity']:<7} {where}")
        out.append(f"          {finding['message']}")
    if result["truncated"]:
        out.append("")
        out.append("(more findings than fit one answer: the counts above are complete; fix "
                   "these and run it again)")
    out += ["", "Quota headroom (used / limit):"]
    for row in result["quota"]:
        share = 100 * row["used"] // row["limit"] if row["limit"] else 0
        where = f"  {row['path']}" if row["path"] else ""
        out.append(f"  {row['quota']:<20} {row['used']:>12,} / {row['limit']:<12,} "
                   f"{share:>3}%{where}")
    if result["incomplete"]:
        out += ["", "INCOMPLETE: the scope is far over its limits (or the comparison budget "
                "ran out); only part of it was checked."]
    return "\n".join(out) + "\n"
