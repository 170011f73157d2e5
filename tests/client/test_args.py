"""The quick parser never disagrees with argparse built from the same table."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from amux.client.args import closest, quick_parse
from amux.client.cli import COMMANDS, PARSER
from amux.errors import AmuxError

TOKENS = st.sampled_from([
    "search", "show", "upsert", "forget", "export", "list", "edit", "mcp", "--pretty",
    "--prefix", "--limit", "--start-line", "--end-line", "--offset", "--expected-revision",
    "--file", "--pre", "--limit=3", "--offset=x", "--", "-", "-h", "--help", "a.md",
    "notes/x.md", "3", "-1", "0", "absent", "部署", "x=y", "--limit=", "",
])


def argparse_result(argv: list[str]) -> dict[str, Any] | None:
    try:
        return vars(PARSER.argparse(argv).parse_args(argv))
    except (AmuxError, SystemExit):
        return None


@settings(max_examples=4000, deadline=None)
@given(st.lists(TOKENS, max_size=7))
def test_quick_parse_accepts_only_what_argparse_accepts_alike(argv: list[str]) -> None:
    quick = quick_parse(COMMANDS, ("--pretty",), argv)
    if quick is not None:
        assert vars(quick) == argparse_result(argv), argv


@pytest.mark.parametrize("argv", [
    ["search", "部署", "blue", "--limit", "3"],
    ["--pretty", "show", "MEMORY.md", "--start-line=2"],
    ["upsert", "a.md", "--expected-revision", "absent", "--file", "f.md"],
    ["forget", "a.md", "--expected-revision", "abc"],
    ["list"], ["list", "projects", "--limit", "10"], ["export", "a.md"],
])
def test_plain_agent_calls_take_the_quick_path(argv: list[str]) -> None:
    quick = quick_parse(COMMANDS, ("--pretty",), argv)
    assert quick is not None and vars(quick) == argparse_result(argv)


def test_options_before_the_words_stay_quick() -> None:
    argv = ["search", "--limit", "3", "a", "b"]
    quick = quick_parse(COMMANDS, ("--pretty",), argv)
    assert quick is not None and vars(quick) == argparse_result(argv)


@pytest.mark.parametrize("argv", [
    ["search", "x", "--pretty"], ["search", "--pretty", "x", "--limit", "3"],
    ["--pretty", "show", "a.md", "--pretty"], ["list", "--pretty", "projects"],
])
def test_pretty_after_the_command_is_quick_and_agrees_with_argparse(argv: list[str]) -> None:
    quick = quick_parse(COMMANDS, ("--pretty",), argv)
    assert quick is not None and quick.pretty is True
    assert vars(quick) == argparse_result(argv)


def test_pretty_is_a_word_after_dashes_and_never_an_options_value() -> None:
    argv = ["search", "x", "--", "--pretty"]
    assert argparse_result(argv) == {"pretty": False, "command": "search",
                                     "terms": ["x", "--pretty"], "prefix": None, "limit": None}
    assert argparse_result(["search", "x", "--prefix", "--pretty"]) is None
    assert quick_parse(COMMANDS, ("--pretty",), ["search", "x", "--prefix", "--pretty"]) is None


def test_every_argument_has_help() -> None:
    for name, command in COMMANDS.items():
        for arg in command.args:
            assert arg.help, (name, arg.name)


@pytest.mark.parametrize(("word", "names", "n", "meant"), [
    ("stat", ["serve", "start", "stop", "status"], 1, ["status"]),  # begun, not nearest
    ("sta", ["start", "status", "stop"], 1, ["start"]),  # begun by two: the nearer
    ("memory.md", ["MEMORY.md", "memo.md", "notes/a.md"], 3, ["MEMORY.md", "memo.md"]),
    ("Readme.MD", ["README.md", "readme.md"], 3, ["README.md", "readme.md"]),
    ("notes/deplyo.md", ["notes/a.md", "notes/deploy.md"], 3, ["notes/deploy.md",
                                                               "notes/a.md"]),
    ("zzz", ["search", "show"], 1, []),
])
def test_closest_prefers_case_then_a_prefix_then_edit_distance(
        word: str, names: list[str], n: int, meant: list[str]) -> None:
    assert closest(word, names, n) == meant
