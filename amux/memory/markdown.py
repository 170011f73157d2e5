"""The Markdown the memory doctor reads: fenced code, entry detail and links.

One fence scanner (`fenced`) decides what is code for every check, so the entry's
"code block" runs and the links skipped inside code always agree. It follows the
CommonMark fence rules at the top level: an opening fence is three or more
backticks or tildes (a backtick fence's info string holds no backtick); it closes
only on a line of the same character, at least as many, with nothing after but
spaces, indented at most three spaces; an unclosed fence runs to the end. A fence
indented four or more spaces is taken as one inside a list item (no container is
parsed) and closes at up to three spaces deeper than it opened.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from urllib.parse import unquote

from amux.memory.frontmatter import front_matter

ENTRY_LONG_LINE_CHARS = 200
"""An entry line longer than this (characters, not bytes) is detail, not a pointer."""

_FENCE = re.compile(r"([ \t]*)(`{3,}|~{3,})(.*)")
_BLANK = " \t\r"
_HEADING = re.compile(r" {0,3}#{1,6}(?:\s|$)")
_LIST_ITEM = re.compile(r"\s*(?:[-*+]|\d{1,9}[.)])(?:\s|$)")
_INLINE_CODE = re.compile(r"(`+)[^\n]*?\1")
_WIKI_LINK = re.compile(r"\[\[([^\[\]\n]+)\]\]")
_MD_LINK = re.compile(r"(?<!!)\[[^\]\n]*\]\(\s*<?([^)\s>]+)>?(?:\s+[^)\n]*)?\)")
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")


def split_lines(text: str) -> list[str]:
    """The lines of `text`, without the empty one after a final newline."""
    lines = text.split("\n")
    if text.endswith("\n"):
        lines.pop()
    return lines


def body(text: str) -> list[str]:
    """The lines after the front matter (all of them when there is none)."""
    return split_lines(text)[front_matter(text)[1]:]


def fenced(lines: Sequence[str]) -> list[bool]:
    """For each line, whether it belongs to a fenced code block (fences included)."""
    mask = [False] * len(lines)
    fence = ""
    deepest_close = 0
    for index, line in enumerate(lines):
        marker = _FENCE.match(line)
        if fence:
            mask[index] = True
            if marker is not None and marker.group(2)[0] == fence[0] \
                    and len(marker.group(2)) >= len(fence) \
                    and not marker.group(3).strip(_BLANK) \
                    and _width(marker.group(1)) <= deepest_close:
                fence = ""
        elif marker is not None and not (marker.group(2)[0] == "`" and "`" in marker.group(3)):
            mask[index] = True
            fence = marker.group(2)
            indent = _width(marker.group(1))
            deepest_close = 3 if indent <= 3 else indent + 3
    return mask


def _width(indent: str) -> int:
    """Columns of leading spaces and tabs (tab stops every 4, as CommonMark counts)."""
    return len(indent.expandtabs(4))


def entry_detail(text: str) -> list[tuple[str, int, int]]:
    """Runs of entry lines that look like detail: (kind, first line, last line), 1-based.

    Index lines (kept): headings, list items and single short lines (a pointer, a
    one-line preference). Detail: fenced code blocks (fences included), table rows,
    any line over `ENTRY_LONG_LINE_CHARS` characters, and paragraphs (two or more
    consecutive prose lines that are neither headings nor list items).
    """
    lines = split_lines(text)
    start = front_matter(text)[1]
    kinds: list[str | None] = [None] * len(lines)
    prose: list[int] = []

    def end_paragraph() -> None:
        if len(prose) >= 2:
            for index in prose:
                kinds[index] = "paragraph"
        prose.clear()

    for index, code in enumerate(fenced(lines[start:]), start):
        line = lines[index]
        stripped = line.strip()
        if code:
            end_paragraph()
            kinds[index] = "code block"
        elif not stripped:
            end_paragraph()
        elif len(stripped) > ENTRY_LONG_LINE_CHARS:
            end_paragraph()
            kinds[index] = "long line"
        elif stripped.startswith("|"):
            end_paragraph()
            kinds[index] = "table"
        elif _HEADING.match(line) or _LIST_ITEM.match(line):
            end_paragraph()
        else:
            prose.append(index)
    end_paragraph()
    runs: list[tuple[str, int, int]] = []
    for index, kind in enumerate(kinds):
        if kind is None:
            continue
        if runs and runs[-1][0] == kind and runs[-1][2] == index:
            runs[-1] = (kind, runs[-1][1], index + 1)
        else:
            runs.append((kind, index + 1, index + 1))
    return runs


def links(text: str) -> tuple[list[str], list[str]]:
    """`[[name]]` targets and relative Markdown link targets to `.md` documents.

    Front matter, fenced code and inline code are skipped; `[[name|label]]` and
    `[[name#part]]` link to `name`; Markdown targets lose `#fragment` and `?query`
    and are percent-decoded; URLs with a scheme, absolute paths and pure anchors are
    not document links.
    """
    wiki: list[str] = []
    markdown: list[str] = []
    lines = body(text)
    for line, code in zip(lines, fenced(lines), strict=True):
        if code or "[" not in line:
            continue
        line = _INLINE_CODE.sub("", line)
        for match in _WIKI_LINK.finditer(line):
            name = re.split(r"[|#]", match.group(1), maxsplit=1)[0].strip()
            if name and name not in wiki:
                wiki.append(name)
        for match in _MD_LINK.finditer(line):
            target = match.group(1)
            if _SCHEME.match(target) or target.startswith(("#", "/")):
                continue
            target = unquote(re.split(r"[#?]", target, maxsplit=1)[0])
            if target.endswith(".md") and target not in markdown:
                markdown.append(target)
    return wiki, markdown
