"""`amux doctor`'s checks, read-only: the Hub and the caller's scope (`hub`), each known
agent and what its adapter relies on in it (`agents`). Each check returns what it saw as
JSON-ready data and the `Finding`s that need attention, each naming the command that fixes
it; `amux/cli/doctor.py` runs them in parallel and prints them."""

from __future__ import annotations

from typing import Literal, NamedTuple

Severity = Literal["problem", "note"]


class Finding(NamedTuple):
    """Something `amux doctor` reports: a problem makes it exit 1, a note does not."""

    check: str
    """What was checked: `hub`, `caller`, `memory`, or `agent NAME`."""
    message: str
    fix: str | None
    """The exact command that fixes it (None when there is no one command)."""
    severity: Severity = "problem"

    def to_json(self) -> dict[str, str | None]:
        return self._asdict()
