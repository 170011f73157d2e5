"""How Appendix A's JSON is encoded on the wire (`encode`, `encoded_size`); its errors
are `amux.errors`.
"""

from __future__ import annotations

import json

TYPE_CHECKING = False  # `typing` is not imported at run time: see connection.py
if TYPE_CHECKING:
    from typing import Any


def encode(value: Any) -> bytes:
    """Compact JSON as Appendix A serializes it: UTF-8, `separators=(",", ":")`,
    `ensure_ascii=False`. Response budgets count these bytes (`encoded_size`)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def encoded_size(value: Any) -> int:
    """Bytes `encode(value)` would produce."""
    return len(encode(value))
