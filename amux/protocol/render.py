"""Render `protocol.md` for a memory channel: the MCP tools or the `amux memory` CLI.

The text lives in `protocol.md` next to this module so people can review it as
prose; this module only fills its {words} from the table at the file's end. A
rendering depends on nothing but the file and the channel, so the same version
renders byte for byte the same in every session (a native session's prompt
prefix never changes because of us).
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Literal, TypeAlias

    Channel: TypeAlias = Literal["mcp", "cli"]
else:  # a name for annotations (and imports of it) only
    Channel = str

CHANNELS: tuple[Channel, ...] = ("mcp", "cli")
MAX_CHARS = 1500
GUIDE_PATH = ".amux/guide.md"
"""Where an agent reads the note guide (`guide.md`): a read-only document every scope's
`get` answers (a segment starting with `.` is never a document of the store)."""

_COMMENT = re.compile(r"<!--.*?-->\s*", re.DOTALL)
_WORD = re.compile(r"\{(\w+)\}")


@cache
def _source() -> tuple[str, str, dict[str, dict[str, str]]]:
    """(version, template, words per channel) parsed from protocol.md."""
    # Beside this module, read directly: importlib.resources costs `amux run` ~4 ms.
    raw = Path(__file__).with_name("protocol.md").read_text(encoding="utf-8")
    head, _, table = _COMMENT.sub("", raw, count=1).partition("\n---\n")
    version_line, _, template = head.partition("\n")
    key, _, version = version_line.partition(":")
    if key.strip() != "version" or not version.strip().isdigit():
        raise ValueError("protocol.md must start with 'version: N'")
    words: dict[str, dict[str, str]] = {channel: {} for channel in CHANNELS}
    rows = [line for line in table.splitlines() if line.startswith("|")]
    header = [cell.strip() for cell in rows[0].strip("|").split("|")]
    for row in rows[2:]:
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        for channel in CHANNELS:
            words[channel][cells[0]] = cells[header.index(channel)]
    return version.strip(), template.strip() + "\n", words


def version() -> str:
    return _source()[0]


def render(channel: Channel) -> str:
    """The protocol text for `channel`; raises if the file leaves a word unfilled."""
    number, template, words = _source()
    values = {"version": number, **words[channel]}

    def fill(match: re.Match[str]) -> str:
        if match.group(1) not in values:
            raise ValueError(f"protocol.md: no {channel} value for {{{match.group(1)}}}")
        return values[match.group(1)]

    return _WORD.sub(fill, template)


@cache
def guide() -> bytes:
    """The note guide of this protocol version: the seed 004 format and rules, read on
    demand (the protocol points to it), so its bytes are no per-session cost."""
    return Path(__file__).with_name("guide.md").read_bytes()
