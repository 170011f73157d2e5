"""Compact JSON exactly as SPEC Appendix A serializes it; budgets count these bytes."""

from __future__ import annotations

import json
from typing import Any


def encode(value: Any) -> bytes:
    """UTF-8, `separators=(",", ":")`, `ensure_ascii=False`."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def encoded_size(value: Any) -> int:
    """Bytes `encode(value)` would produce."""
    return len(encode(value))
