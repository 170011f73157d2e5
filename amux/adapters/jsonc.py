"""JSON with comments and trailing commas, as agents' own config files are written
(OpenCode's `opencode.jsonc` and `OPENCODE_CONFIG_CONTENT`, Gemini CLI's settings.json):
read with the standard library, so an adapter can merge its keys into a user's text."""

from __future__ import annotations

import json
import re
from typing import Any

_NOISE = re.compile(r'("(?:[^"\\\n]|\\.)*")|//[^\n]*|/\*.*?\*/'
                    r'|,(?=(?:\s|//[^\n]*|/\*(?:[^*]|\*(?!/))*\*/)*[}\]])', re.S)
"""A string, kept whole (a `//` inside one is text); else a comment, or a comma before a
closing bracket (comments between them allowed: `"a": 1, // note`; each ends at its
first `*/`, so the look-ahead cannot run over a value into a later comment), dropped."""


def loads(text: str) -> Any:
    """The value of a JSONC text; `ValueError` (json's own) when it is not valid."""
    try:
        return json.loads(text)
    except ValueError:
        pass  # plain JSON is the common case: only now pay for the regex
    return json.loads(_NOISE.sub(lambda found: found.group(1) or " ", text))


def load_object(text: str, where: str, fix: str) -> dict[str, Any]:
    """The JSON object a user's config text holds; `ValueError` naming `where` (the file or
    variable) and saying `fix` when it is not valid JSONC or not an object."""
    try:
        value = loads(text)
    except ValueError as exc:
        raise ValueError(f"{where} is not valid JSON(C): {exc}; {fix}") from None
    if not isinstance(value, dict):
        raise ValueError(f"{where} is not a JSON object; {fix}")
    return value
