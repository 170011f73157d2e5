"""The wire contract of SPEC Appendix A: the error table, `ClientError` and `encode`.

`ERROR_TABLE` is the only copy of the code → (HTTP status, exit code) mapping: the
store's error classes (`amux.memory.errors`) take their status and exit code from
it, the Hub answers with that status and the CLI exits with that code. It lives
here because the client imports only the standard library. Codes are public:
add, never rename.
"""

from __future__ import annotations

import json

TYPE_CHECKING = False  # `typing` is not imported at run time: see connection.py
if TYPE_CHECKING:
    from typing import Any

ERROR_TABLE: dict[str, tuple[int | None, int]] = {
    # code: (HTTP status, or None when no Hub answered; CLI exit code)
    "invalid_argument": (400, 2),
    "invalid_path": (400, 2),
    "not_utf8": (400, 2),
    "revision_conflict": (409, 3),
    "memory_disabled": (503, 4),
    "hub_unreachable": (None, 4),
    "hub_busy": (503, 4),
    "unauthenticated": (401, 5),
    "forbidden": (403, 5),
    "binding_mismatch": (403, 5),
    "quota_exceeded": (413, 6),
    "secret_detected": (422, 7),
    "not_found": (404, 1),
    "storage_unavailable": (507, 8),
    "internal": (500, 1),
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
        """The code's exit status; 1 for a code this client does not know."""
        return ERROR_TABLE.get(self.code, (None, 1))[1]

    def to_wire(self) -> dict[str, Any]:
        return {"error": {"code": self.code, "message": self.message, **self.details}}


def encode(value: Any) -> bytes:
    """Compact JSON as Appendix A serializes it: UTF-8, `separators=(",", ":")`,
    `ensure_ascii=False`. Response budgets count these bytes (`encoded_size`)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def encoded_size(value: Any) -> int:
    """Bytes `encode(value)` would produce."""
    return len(encode(value))
