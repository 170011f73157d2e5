"""Logical path rules of SPEC §2, each at and one past its boundary."""

from __future__ import annotations

import pytest

from amux.errors import InvalidPath
from amux.memory.paths import validate_path, validate_prefix


@pytest.mark.parametrize(
    "path",
    [
        "MEMORY.md",
        "projects/github.com-org-repo/decisions.md",
        "偏好/沟通.md",
        "a b/c d.md",
        "x.md/y.md",
        "a" * 252 + ".md",
        "/".join(["a" * 200] * 4) + "/" + "b" * 216 + ".md",  # 1,023 bytes
        "/".join(["a" * 200] * 4) + "/" + "b" * 217 + ".md",  # 1,024 bytes: at the limit
        "é" * 126 + ".md",  # 255 bytes of UTF-8
    ],
)
def test_valid_paths_are_accepted(path: str) -> None:
    logical = validate_path(path)
    assert logical.text == path
    assert "/".join(logical.segments) == path


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("", "empty path"),
        ("/abs.md", "absolute"),
        ("a//b.md", "empty segment"),
        ("a/", "empty segment"),
        ("./a.md", "'.' segment"),
        ("a/../b.md", "'..' segment"),
        ("..", "'..' segment"),
        (".hidden.md", "starts with '.'"),
        ("a/.git/x.md", "starts with '.'"),
        ("a\\b.md", "backslash"),
        ("a\x00b.md", "U+0000"),
        ("a\nb.md", "U+000A"),
        ("a\x7fb.md", "U+007F"),
        ("a\x85b.md", "U+0085"),
        ("notes.txt", "end in '.md'"),
        ("notes.MD", "end in '.md'"),
        ("notes", "end in '.md'"),
        ("a\udcffb.md", "surrogate"),
        ("a" * 253 + ".md", "limit is 255"),
        ("é" * 127 + ".md", "limit is 255"),
        ("/".join(["a" * 200] * 4) + "/" + "b" * 218 + ".md", "limit is 1024"),
    ],
)
def test_invalid_paths_name_the_rule(path: str, reason: str) -> None:
    with pytest.raises(InvalidPath) as caught:
        validate_path(path)
    assert reason in caught.value.reason
    assert caught.value.to_wire()["error"]["code"] == "invalid_path"
    assert caught.value.to_wire()["error"]["reason"] == caught.value.reason


def test_non_string_path_is_refused() -> None:
    with pytest.raises(InvalidPath):
        validate_path(b"a.md")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("prefix", "segments"),
    [
        (None, ()),
        ("", ()),
        ("projects", ("projects",)),
        ("projects/amux/", ("projects", "amux")),
        ("projects/a.md", ("projects", "a.md")),
    ],
)
def test_prefixes_are_whole_segments(prefix: str | None, segments: tuple[str, ...]) -> None:
    assert validate_prefix(prefix) == segments


@pytest.mark.parametrize("prefix", ["/projects", "a//b", "../x", "a/.x", "a\\b", "a//"])
def test_invalid_prefixes_are_refused(prefix: str) -> None:
    with pytest.raises(InvalidPath):
        validate_prefix(prefix)


def _format_characters() -> list[str]:
    import sys
    import unicodedata

    return [chr(c) for c in range(sys.maxunicode + 1) if unicodedata.category(chr(c)) == "Cf"]


def test_every_invisible_format_character_is_refused_in_a_path() -> None:
    for char in _format_characters():
        with pytest.raises(InvalidPath) as refused:
            validate_path(f"notes/a{char}b.md")
        assert f"U+{ord(char):04X}" in refused.value.reason
        assert "look-alike" in refused.value.reason


@pytest.mark.parametrize("char", ["\u200b", "\u200d", "\u202e", "\u2066", "\ufeff", "\u00ad"])
def test_zero_width_and_bidi_controls_are_refused_with_the_fix(char: str) -> None:
    with pytest.raises(InvalidPath, match="remove it"):
        validate_path(f"projects/x{char}/notes.md")


def test_visible_letters_in_either_normal_form_stay_valid() -> None:
    # NFC and NFD spell one name two ways; both are legal paths (the doctor reports pairs)
    assert validate_path("notes/caf\u00e9.md").text != validate_path("notes/cafe\u0301.md").text
    validate_path("项目/决定.md")
