"""The client's half of the wire contract (SPEC Appendix A): exit codes and errors.

The client imports only the standard library, so it cannot use
`amux.memory.errors`; `tests/client/test_wire.py` keeps this table equal to
`amux.memory.errors.ERROR_TABLE`.
"""

from __future__ import annotations

import json

TYPE_CHECKING = False  # `typing` is not imported at run time: see connection.py
if TYPE_CHECKING:
    from typing import Any

EXIT_CODES: dict[str, int] = {
    "invalid_argument": 2,
    "invalid_path": 2,
    "not_utf8": 2,
    "revision_conflict": 3,
    "memory_disabled": 4,
    "hub_unreachable": 4,
    "hub_busy": 4,
    "unauthenticated": 5,
    "forbidden": 5,
    "binding_mismatch": 5,
    "quota_exceeded": 6,
    "secret_detected": 7,
    "not_found": 1,
    "storage_unavailable": 8,
    "internal": 1,
}


class ClientError(Exception):
    """An Appendix A error as the client reports it: code, message, extra fields."""

    def __init__(self, code: str, message: str, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.details = details or {}

    @property
    def exit_code(self) -> int:
        return EXIT_CODES.get(self.code, 1)

    def to_wire(self) -> dict[str, Any]:
        return {"error": {"code": self.code, "message": self.message, **self.details}}


def encode(value: Any) -> bytes:
    """Compact UTF-8 JSON exactly as the Hub writes it."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
