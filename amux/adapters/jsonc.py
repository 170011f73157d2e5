"""JSON with comments and trailing commas, as agents' own config files are written
(OpenCode's `opencode.jsonc` and `OPENCODE_CONFIG_CONTENT`, Gemini CLI's settings.json):
read with the standard library, so an adapter can merge its keys into a user's text."""

from __future__ import annotations

import json
import re

from amux.adapters.base import PlanRefused

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_NOISE = re.compile(r'("(?:[^"\\\n]|\\.)*")|//[^\n]*|/\*.*?\*/'
                    r'|,(?=(?:\s|//[^\n]*|/\*(?:[^*]|\*(?!/))*\*/)*[}\]])', re.S)
"""A string, kept whole (a `//` inside one is text); else a comment, or a comma before a
closing bracket (comments between them allowed: `"a": 1, // note`; each ends at its
first `*/`, so the look-ahead cannot run over a value into a later comment), dropped."""


MAX_DEPTH = 512
"""The deepest nesting (objects and arrays) a config may have; deeper is refused. json
recurses, in C and in Python, when it reads a text and when an adapter writes the merged
settings back: within this depth both stay far from the recursion limit. No agent's
config comes near it."""
_TOO_DEEP = f"nested too deeply (at most {MAX_DEPTH} levels of objects and arrays)"


def loads(text: str) -> Any:
    """The value of a JSONC text; `ValueError` when it is not valid or nested deeper than
    `MAX_DEPTH`."""
    try:
        try:
            value = json.loads(text)
        except ValueError:  # plain JSON is the common case: only now pay for the regex
            value = json.loads(_NOISE.sub(lambda found: found.group(1) or " ", text))
    except RecursionError:
        raise ValueError(_TOO_DEEP) from None
    if _too_deep(value):
        raise ValueError(_TOO_DEEP)
    return value


def _too_deep(value: Any) -> bool:
    """Whether `value` nests deeper than `MAX_DEPTH`; walked with a list, never recursion."""
    pending = [(value, 1)] if isinstance(value, (dict, list)) else []
    while pending:
        container, depth = pending.pop()
        if depth > MAX_DEPTH:
            return True
        pending.extend((item, depth + 1)
                       for item in (container.values() if isinstance(container, dict)
                                    else container)
                       if isinstance(item, (dict, list)))
    return False


def load_object(text: str, where: str, fix: str) -> dict[str, Any]:
    """The JSON object a user's config text holds; `PlanRefused` naming `where` (the file or
    variable) and saying `fix` when it is not valid JSONC (nesting within `MAX_DEPTH`
    included) or not an object."""
    try:
        value = loads(text)
    except ValueError as exc:
        raise PlanRefused(f"{where} is not valid JSON(C): {exc}; {fix}") from None
    if not isinstance(value, dict):
        raise PlanRefused(f"{where} is not a JSON object; {fix}")
    return value
