"""How Appendix A's JSON is encoded (`encode`, `encoded_size`): what the Hub answers, the
CLI prints and the store counts against its budgets; its errors are `amux.errors`.
"""

from __future__ import annotations

import json

TYPE_CHECKING = False  # `typing` is not imported at run time: the client starts fast
if TYPE_CHECKING:
    from typing import Any


def encode(value: Any) -> bytes:
    """Compact JSON as Appendix A serializes it: UTF-8, `separators=(",", ":")`,
    `ensure_ascii=False`. Response budgets count these bytes (`encoded_size`)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def encoded_size(value: Any) -> int:
    """Bytes `encode(value)` would produce."""
    return len(encode(value))
