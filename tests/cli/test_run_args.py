"""`amux run`'s quick parse of its own options reads every plain call as argparse does
and leaves everything else (help, abbreviations, errors) to argparse."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from amux.cli.run import _parser, quick_parse, run_main
from amux.errors import AmuxError

TOKENS = st.sampled_from(["--dry-run", "--resume", "--resume=ID", "--as-user", "--as-user=al",
                          "--pass-env", "--pass-env=KEY", "--dry", "--as", "-h", "--help",
                          "--dry-run=1", "pi", "codex", "ID", "alice", "KEY", "-", "-x", "",
                          "--endpoint", "--endpoint=http://h/v1", "--model", "--model=m",
                          "--endpoint-api", "--endpoint-api=openai", "--endpoint-api=x",
                          "openai", "anthropic", "--endpoint-key-env", "--endpoint",
                          "--no-window-check", "--no-window-check=1", "--no-window"])


@given(st.lists(TOKENS, max_size=6))
def test_a_quick_parse_is_argparses(ours: list[str]) -> None:
    quick = quick_parse(ours)
    if quick is None:
        return  # argparse decides
    try:
        full = _parser().parse_args(ours)
    except (AmuxError, SystemExit):
        raise AssertionError(f"quick parse accepted what argparse refuses: {ours}") from None
    assert vars(quick) == vars(full)


def test_plain_calls_are_quick_and_the_rest_is_argparses() -> None:
    assert vars(quick_parse(["--dry-run", "--resume", "S", "--pass-env=A", "--pass-env", "B",
                             "--no-window-check"]) or {}) == {
        "dry_run": True, "no_window_check": True, "no_memory": False, "no_endpoint": False,
        "resume": "S", "as_user": None,
        "pass_env": ["A", "B"], "endpoint": None, "model": None, "endpoint_api": None,
        "endpoint_key_env": None, "agent": None}
    assert quick_parse(["--as-user", "alice", "claude"]) is not None
    for ours in (["--help"], ["--dry"], ["--resume"], ["--resume", "--dry-run"], ["a", "b"]):
        assert quick_parse(ours) is None


def test_an_endpoint_whose_user_and_password_cannot_be_told_apart_is_refused_unnamed(
        capsys: pytest.CaptureFixture[str]) -> None:
    """amux shows and stores an endpoint's URL without its user and password, so it must
    tell where they end: a character a URL percent-encodes (a quote, a space) is refused,
    and neither that refusal nor the one of another scheme names the password."""
    for url, said in (('http://me:p"s3cr3t@127.0.0.1:9/v1', "percent-encode the user and "
                       "password in its URL"),
                      ("HTTP://me:s3cr3t@127.0.0.1:9/v1", "not an http:// or https:// URL"),
                      ("ftp://me:s3cr3t@127.0.0.1:9/v1", "not an http:// or https:// URL")):
        assert run_main(["--endpoint", url, "--model", "m", "codex"]) == 2
        error = capsys.readouterr().err
        assert said in error and "s3cr3t" not in error
