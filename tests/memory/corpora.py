"""The secret guard's corpora (fixtures/secrets): its real-shaped fake secrets, each under
the rule that must find it, and ordinary notes in which nothing may be found."""

from __future__ import annotations

import re
from pathlib import Path

CORPORA = Path(__file__).parents[2] / "fixtures" / "secrets"
CASE_HEADER = re.compile(r"^### (\S+)\n", re.MULTILINE)


def secret_cases() -> list[tuple[str, str]]:
    """(expected rule, case text) for every case of secrets.txt."""
    parts = CASE_HEADER.split((CORPORA / "secrets.txt").read_text(encoding="utf-8"))
    return list(zip(parts[1::2], parts[2::2], strict=True))


def notes() -> dict[str, str]:
    return {path.name: path.read_text(encoding="utf-8")
            for path in sorted((CORPORA / "notes").glob("*.md"))}
