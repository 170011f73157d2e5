"""Front matter: the small YAML subset the store reads (`name`, `description`).

No YAML library: the doctor needs two top-level string fields, and a document's
front matter must never make it fail. docs/store.md ("Checks and thresholds")
describes the subset.
"""

from __future__ import annotations

import re

_FM_KEY = re.compile(r"([A-Za-z_][\w.-]*)[ \t]*:(.*)")
_BLOCK_INDICATOR = re.compile(r"[|>][+-]?[0-9]?")


def front_matter(text: str) -> tuple[dict[str, str] | None, int]:
    """Top-level fields of a leading `---` block, and the index of the first body line.

    A small YAML subset: `key: value` at column 0; indented lines after a key
    (block scalars `|`/`>`, folded plain scalars, nested mappings) are joined into
    its value; matching quotes are removed. An unterminated block is not front matter.
    """
    lines = text.split("\n")
    if lines[0].rstrip() != "---":
        return None, 0
    fields: dict[str, str] = {}
    key: str | None = None
    for number in range(1, len(lines)):
        line = lines[number]
        if line.rstrip() in ("---", "..."):
            return fields, number + 1
        match = _FM_KEY.fullmatch(line.rstrip())
        if match is not None:
            key = match.group(1).lower()
            value = match.group(2).strip()
            fields[key] = "" if _BLOCK_INDICATOR.fullmatch(value) else _unquote(value)
        elif key is not None and line[:1] in (" ", "\t") and line.strip():
            fields[key] = (fields[key] + " " + line.strip()).strip()
    return None, 0


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1].strip()
    return value
