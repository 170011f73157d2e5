"""JSONC as agents' config files are written: comments and trailing commas are dropped,
strings (a `//` in a URL) are kept whole, anything else is json's own ValueError."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from amux.adapters import jsonc

VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20)


@given(VALUES)
def test_plain_json_reads_as_json(value: object) -> None:
    assert jsonc.loads(json.dumps(value)) == value
    assert jsonc.loads(json.dumps(value, indent=2)) == value


@given(VALUES)
def test_comments_and_trailing_commas_change_nothing(value: object) -> None:
    text = json.dumps(value, indent=1)
    # json.dumps escapes a line break inside a string: every raw one is between tokens.
    noisy = "// a comment\n" + text.replace("\n", " /* c */\n") + "\n// end"
    assert jsonc.loads(noisy) == value
    assert jsonc.loads(f'{{"v": {noisy}\n,}}') == {"v": value}
    assert jsonc.loads(f"[{noisy}\n, ]") == [value]


def test_what_agents_write() -> None:
    text = """{
      // the user's provider
      "provider": {"url": "http://127.0.0.1:1/v1", "note": "a /* not a comment */ text",},
      /* block */ "instructions": ["a.md", "b.md",],
    }"""
    assert jsonc.loads(text) == {
        "provider": {"url": "http://127.0.0.1:1/v1", "note": "a /* not a comment */ text"},
        "instructions": ["a.md", "b.md"]}


@pytest.mark.parametrize("text", ["{", '{"a": 1 /* open', '{"a": }', "", '{"a": "x\n"}'])
def test_invalid_text_is_a_value_error(text: str) -> None:
    with pytest.raises(ValueError):
        jsonc.loads(text)


def test_a_users_config_must_hold_an_object_and_the_error_says_where_and_what_to_do() -> None:
    assert jsonc.load_object('{"a": 1 // mine\n}', "X", "fix X") == {"a": 1}
    with pytest.raises(ValueError, match=r"^CONF is not valid JSON\(C\): .*; unset CONF$"):
        jsonc.load_object("{", "CONF", "unset CONF")
    with pytest.raises(ValueError, match=r"^CONF is not a JSON object; unset CONF$"):
        jsonc.load_object("[1]", "CONF", "unset CONF")


def test_a_trailing_comma_before_a_comment_is_dropped_too() -> None:
    assert jsonc.loads('{"a": 1, // the last one\n}') == {"a": 1}
    assert jsonc.loads('["x", /* done */\n]') == ["x"]
    assert jsonc.loads('{"u": "http://h/",  // "}"\n}') == {"u": "http://h/"}
