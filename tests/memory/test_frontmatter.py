"""Front matter: the small YAML subset the store reads."""

from __future__ import annotations

import pytest

from amux.memory.frontmatter import front_matter


@pytest.mark.parametrize(("text", "description"), [
    ("---\nname: a\ndescription: one line\n---\nbody", "one line"),
    ("---\ndescription: >\n  folded\n  text\nname: a\n---\n", "folded text"),
    ("---\ndescription: |-\n  block\n---\n", "block"),
    ("---\ndescription:\n  plain continued\n---\n", "plain continued"),
    ("---\ndescription: \"\"\n---\n", ""),
    ("---\ndescription: 'quoted'\n---\n", "quoted"),
    ("---\nDescription: case\n---\n", "case"),
])
def test_front_matter_description(text: str, description: str) -> None:
    fields, _start = front_matter(text)
    assert fields is not None and fields.get("description", "") == description


def test_front_matter_must_open_and_close() -> None:
    assert front_matter("---\nname: a\nno end\n") == (None, 0)
    assert front_matter("name: a\n---\n") == (None, 0)
    assert front_matter("---\nname: a\n...\nbody\n") == ({"name": "a"}, 3)
