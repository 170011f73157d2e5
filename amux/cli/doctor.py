"""`amux doctor [--json]`: is this set-up right? Read-only, in a few seconds.

It checks the Hub this caller reaches (never starting one), the caller's principal and
scope, that scope's health, and each known agent on PATH with what its adapter relies on
in it (`amux.doctor`); the checks run in parallel threads, each bounded. Every problem
names the command that fixes it. Exit 0 when all is well, 1 when something needs
attention (notes alone do not), 2 for a usage error. docs/doctor.md.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from amux.adapters import ADAPTERS
from amux.client.home import amux_home
from amux.doctor import Finding, agents, hub


def doctor_main(argv: list[str]) -> int:
    from amux.client.args import strict_parser
    from amux.client.cli import report
    from amux.errors import AmuxError

    parser = strict_parser(prog="amux doctor", description="Check, read-only, the Hub, this "
                           "caller's scope and memory, and each known agent ("
                           + ", ".join(ADAPTERS) + ") with the flags and variables amux relies "
                           "on in it; each problem names the command that fixes it. Exit 1 "
                           "when something needs attention.")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    try:
        args = parser.parse_args(argv)
    except AmuxError as error:
        return report("amux doctor", error)
    result = _with_status(lambda: diagnose(os.environ))
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        _print(result)
    return 0 if result["ok"] else 1


def _with_status(work: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """`work()`, under a spinner on stderr when it is a terminal: the checks take a few
    seconds (each agent is started to ask its help)."""
    if not sys.stderr.isatty():
        return work()
    from rich.console import Console

    with Console(stderr=True).status("checking the Hub, your scope and the agents…"):
        return work()


def diagnose(env: Mapping[str, str]) -> dict[str, Any]:
    """Every check, in parallel: {"ok", "hub", "caller", "memory", "agents", "findings"}."""
    home = amux_home(env)
    with ThreadPoolExecutor(max_workers=1 + len(ADAPTERS)) as pool:
        hub_check = pool.submit(hub.check, env)
        agent_checks = [pool.submit(agents.check, name, env, home) for name in ADAPTERS]
    seen, findings = hub_check.result()
    found = []
    for done in agent_checks:
        agent, more = done.result()
        found.append(agent)
        findings += more
    if any(agent["found"] for agent in found):  # a user need not have them all
        missing = {f"agent {agent['name']}" for agent in found if not agent["found"]}
        findings = [finding._replace(severity="note") if finding.check in missing else finding
                    for finding in findings]
    return {"ok": not any(f.severity == "problem" for f in findings), **seen, "agents": found,
            "findings": [finding.to_json() for finding in findings]}


def _print(result: Mapping[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    console = Console(highlight=False)
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold")
    table.add_column()
    for label, line in _lines(result):
        table.add_row(label, Text(line))
    console.print(table)
    findings = [Finding(**entry) for entry in result["findings"]]
    for finding in findings:
        mark, style = ("✗", "red") if finding.severity == "problem" else ("•", "yellow")
        text = Text(f"{mark} {finding.check}: ", style=style)
        text.append(finding.message, style="default")
        if finding.fix:
            text.append("\n    fix: ", style="dim").append(finding.fix, style="bold")
        console.print(text)
    problems = sum(f.severity == "problem" for f in findings)
    notes = len(findings) - problems
    if problems:
        said = f"{_count(problems, 'problem')} need{'s' if problems == 1 else ''} attention."
    elif notes:
        said = f"No problems; {_count(notes, 'note')} above, worth a look."
    else:
        said = "All well."
    console.print(Text(said, style="red" if problems else "green"))


def _count(number: int, thing: str) -> str:
    return f"{number} {thing}{'' if number == 1 else 's'}"


def _lines(result: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(label, line) for each thing checked, as a person reads them."""
    status = result["hub"]
    if status.get("running"):
        lines = [("Hub", f"running, pid {status['pid']}, amux {status['version']}, memory "
                  f"{'on' if status['memory_enabled'] else 'off'}, isolation "
                  f"{'on' if status['isolation_enabled'] else 'off'}"),
                 ("", "listeners: " + ", ".join(f"{entry['kind']} {entry['address']}"
                                                for entry in status["listeners"]))]
    else:
        lines = [("Hub", "not running")]
    caller = result["caller"]
    if caller is not None:
        scope = (f"principal {caller['principal']}, scope {caller['binding']}"
                 if caller["principal"] is not None else "scope unknown")
        lines.append(("Caller", f"{caller['connection']} ({caller['hub']}): {scope}"))
    memory = result["memory"]
    if memory is not None:
        counts = ", ".join(f"{n} {severity}" for severity, n in memory["by_severity"].items())
        lines.append(("Memory", f"scope {memory['scope']}: {memory['documents']:,} documents, "
                      f"{memory['bytes']:,} bytes, {memory['findings']} findings"
                      + (f" ({counts})" if counts else "")))
    for agent in result["agents"]:
        if not agent["found"]:
            lines.append((agent["name"], "not on PATH"))
            continue
        present = sum(r["present"] is True for r in agent["requirements"])
        lines.append((agent["name"], f"{agent['version'] or 'version unknown'} at "
                      f"{agent['path']}: {present} of {len(agent['requirements'])} "
                      "integration points present"))
    return lines
