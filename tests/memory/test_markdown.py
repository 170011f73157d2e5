"""Markdown as the memory doctor reads it: one fence scanner for entry detail and links."""

from __future__ import annotations

from hypothesis import assume, given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from amux.memory import markdown


def test_pointer_entry_has_no_detail() -> None:
    text = ("# Memory\n\nShort preferences and pointers.\n\n## Preferences\n"
            "- Answer in English.\n  1. nested item\n* [deploy](projects/x/deploy.md) — how we "
            "ship\n+ [[style]]\n\n## 项目\n- 部署说明见 [[deploy]]\n")
    assert markdown.entry_detail(text) == []


def test_entry_detail_kinds_and_line_numbers() -> None:
    text = "\n".join([
        "---", "name: entry", "---",  # 1-3 front matter: never detail
        "# Memory",  # 4
        "A paragraph that goes on", "for two lines.",  # 5-6
        "",
        "~~~~", "```", "inside", "~~~~",  # 8-11: the inner ``` does not close ~~~~
        "- " + "x" * 199,  # 12: 201 characters stripped... long
        "- " + "y" * 198,  # 13: 200 characters: still a pointer
        "| a | b |",  # 14
        "- " + "长" * 199,  # 15: counted in characters, not bytes
        "One short line alone is a preference.",  # 16
    ]) + "\n"
    assert markdown.entry_detail(text) == [
        ("paragraph", 5, 6), ("code block", 8, 11), ("long line", 12, 12), ("table", 14, 14),
        ("long line", 15, 15)]


def test_links_are_parsed_outside_code() -> None:
    text = ("---\nname: x\ndescription: '[[not-in-front-matter]]'\n---\n"
            "[[a]] [[b|label]] [[c#part]] `[[code]]` ![img](pic.md)\n"
            "[rel](../x/y.md#top) [web](https://e.com/a.md) [abs](/a.md) [anchor](#a)\n"
            "[q](z%20z.md?x=1) [txt](notes.txt) [t](<spaced.md> \"title\")\n"
            "```\n[[fenced]] [f](f.md)\n```\n")
    assert markdown.links(text) == (["a", "b", "c"], ["../x/y.md", "z z.md", "spaced.md"])


# -- fences ----------------------------------------------------------------------------------

FOUR_BACKTICKS = "````\n```\n[[inside]] [f](f.md)\n```\n````\n[[after]]\n"
"""Issue 13: a triple-backtick line inside a four-backtick fence does not close it."""


def test_a_shorter_fence_inside_a_longer_one_is_code() -> None:
    assert markdown.links(FOUR_BACKTICKS) == (["after"], [])
    assert markdown.entry_detail(FOUR_BACKTICKS) == [("code block", 1, 5)]


def test_fence_rules() -> None:
    lines = ["```a`b", "[[not a fence: inline code]]",  # a backtick info string has no `
             "~~~ info `ok`", "~~~ x", "   ~~~", "[[out]]",  # tildes: info anything, 3-space close
             "```", "    ```", "``` x", "```\t", "text",  # indented 4 and info: not closers
             "- item", "    ````", "      ```", "    `````", "[[listed]]"]  # inside a list item
    assert markdown.fenced(lines) == [False, False, True, True, True, False,
                                      True, True, True, True, False,
                                      False, True, True, True, False]


def test_an_unclosed_fence_runs_to_the_end() -> None:
    assert markdown.links("```\n[[a]]\n``\n~~~\n[[b]]\n") == ([], [])


def test_front_matter_is_not_scanned_for_fences() -> None:
    text = "---\nname: x\ndescription: '```'\n---\n[[a]]\n"
    assert markdown.links(text) == (["a"], [])


_FENCE_LINES = st.builds(lambda indent, char, count, after: " " * indent + char * count + after,
                         st.integers(0, 3), st.sampled_from("`~"), st.integers(3, 5),
                         st.sampled_from(["", " ", "\t", "py", " a`b", "`", "~"]))
_OTHER_LINES = st.sampled_from(["", "text [[x]]", "``", "~~", "", "text", "    ```", "     ~~~~"])
_DEEP = ("    ```", "     ~~~~")
"""Indented 4 or more: closing nothing inside a fence; outside one, a fence inside a
list item to the scanner (it parses no containers) and indented code to CommonMark."""


@settings(max_examples=500, deadline=None)
@given(st.lists(st.one_of(_FENCE_LINES, _OTHER_LINES), max_size=14))
def test_fences_agree_with_commonmark(lines: list[str]) -> None:
    """Top-level fences as markdown-it-py (a CommonMark reference) finds them."""
    expected = [False] * len(lines)
    for token in MarkdownIt("commonmark").parse("\n".join(lines) + "\n"):
        if token.type == "fence" and token.map is not None:
            for index in range(token.map[0], min(token.map[1], len(lines))):
                expected[index] = True
    assume(not any(line in _DEEP and not code for line, code in zip(lines, expected,
                                                                      strict=True)))
    assert markdown.fenced(lines) == expected
