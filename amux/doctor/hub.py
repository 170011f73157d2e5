"""The Hub as this caller reaches it, read-only: whether it answers and its status, the
caller's principal and scope (`POST /v1/binding`, what a launch freezes), and that scope's
health (`POST /v1/memory/doctor`, what `amux memory doctor` prints), summarized.

The connection is the client's own (SPEC §3 lookup order: `AMUX_MEMORY_CONFIG`, then
`AMUX_HUB` + `AMUX_TOKEN`, then the local default). No Hub is ever started: one that does
not answer is reported with the command that starts it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from amux import __version__
from amux.client.connection import Connection, find_connection
from amux.client.transport import HubClient
from amux.doctor import Finding
from amux.errors import AmuxError

STATUS_TIMEOUT = 3.0
DOCTOR_TIMEOUT = 10.0
"""The memory doctor reads the whole scope (within its own budget)."""
START = "amux hub start"
RESTART = "amux hub stop && amux hub start"
MEMORY_ON = "amux system config set memory.enabled true"
SHARED_SOCKET = ("amux system config set listeners.shared_socket /run/amux/hub.sock && "
                 + RESTART)


def check(env: Mapping[str, str]) -> tuple[dict[str, Any], list[Finding]]:
    """{"hub": …, "caller": …, "memory": …} and what needs attention."""
    seen: dict[str, Any] = {"hub": {"running": False}, "caller": None, "memory": None}
    try:
        connection = find_connection(env)
    except AmuxError as error:
        fix = START if error.code == "hub_unreachable" else None
        return seen, [Finding("hub", error.message, fix)]
    seen["caller"] = {"connection": connection.source, "hub": connection.hub,
                      "principal": None, "binding": None}
    try:
        with HubClient(connection, timeout=STATUS_TIMEOUT) as client:
            status = client.call("/v1/status", {})
    except AmuxError as error:
        return seen, [_unreachable(connection, error)]
    seen["hub"] = {**status, "client_version": __version__}
    findings = _status_findings(connection, status)
    if not status.get("memory_enabled"):
        return seen, findings
    try:
        with HubClient(connection, timeout=STATUS_TIMEOUT) as client:
            binding = client.call("/v1/binding", {})
        seen["caller"].update(principal=binding["principal"], binding=binding["binding"])
        with HubClient(connection, timeout=DOCTOR_TIMEOUT) as client:
            seen["memory"] = summary(client.call("/v1/memory/doctor", {}))
    except AmuxError as error:
        findings.append(_refused(connection, error))
        return seen, findings
    findings += _memory_findings(seen["memory"])
    return seen, findings


def _unreachable(connection: Connection, error: AmuxError) -> Finding:
    if error.code == "unauthenticated":
        return _refused(connection, error)
    if error.code != "hub_unreachable" or "peer_uid" in error.details:
        return Finding("hub", f"{connection.hub} ({connection.source}): {error.code}: "
                       f"{error.message}", None)
    if connection.is_local_default:
        return Finding("hub", f"the Hub is not running ({connection.hub})", START)
    unset = ("unset AMUX_MEMORY_CONFIG" if connection.source == "AMUX_MEMORY_CONFIG"
             else "unset AMUX_HUB AMUX_TOKEN")
    return Finding("hub", f"the Hub that {connection.source} names ({connection.hub}) does "
                   "not answer: start it where it runs, or use the local default", unset)


def _status_findings(connection: Connection, status: Mapping[str, Any]) -> list[Finding]:
    findings = []
    if not status.get("memory_enabled"):
        findings.append(Finding("hub", "memory is off on the Hub (memory.enabled = false): "
                                "every launch runs without amux memory", MEMORY_ON))
    if status.get("version") != __version__:
        findings.append(Finding(
            "hub", f"the Hub runs amux {status.get('version')}, this client is "
            f"{__version__}: restart the Hub to run the installed version",
            RESTART if connection.is_local_default else None))
    shared = any(entry.get("kind") == "shared" for entry in status.get("listeners", []))
    if status.get("isolation_enabled") and not shared:
        findings.append(Finding("hub", "isolation is on but the Hub has no shared socket: "
                                "`amux run --as-user` cannot reach it", SHARED_SOCKET, "note"))
    return findings


def _refused(connection: Connection, error: AmuxError) -> Finding:
    """The Hub answered but refused this caller's token: a new one fixes it (the local
    default's is written afresh by the Hub when it starts; another is the owner's to
    issue, on the Hub's host)."""
    fix = RESTART if connection.is_local_default else "amux principal token NAME"
    return Finding("caller", f"the Hub refused this caller ({connection.source}): "
                   f"{error.code}: {error.message}", fix)


def summary(result: Mapping[str, Any]) -> dict[str, Any]:
    """The memory doctor's answer in brief: the scope, its size and findings by severity
    (of those listed: `truncated` says the counts by category hold more)."""
    severities: dict[str, int] = {}
    for finding in result["findings"]:
        severities[finding["severity"]] = severities.get(finding["severity"], 0) + 1
    return {"scope": result["scope"], "documents": result["documents"],
            "bytes": result["bytes"], "findings": sum(result["counts"].values()),
            "by_severity": severities, "truncated": result["truncated"],
            "incomplete": result["incomplete"]}


def _memory_findings(memory: Mapping[str, Any]) -> list[Finding]:
    """Errors in the scope's files are a problem; warnings and notes only a note."""
    if not memory["findings"] and not memory["incomplete"]:
        return []
    counts = ", ".join(f"{count} {severity}{'' if count == 1 else 's'}"
                       for severity, count in memory["by_severity"].items())
    message = f"scope {memory['scope']}: {memory['findings']} findings ({counts})"
    if memory["incomplete"]:
        message += "; it is far over its limits, so only part of it was checked"
    severe = memory["incomplete"] or memory["by_severity"].get("error", 0)
    return [Finding("memory", message, "amux memory doctor", "problem" if severe else "note")]
