"""`amux eval live`: every exit status its --help documents, each in the case it names.

Exit 3 both ways (refused before any sample; truncation seen after the run, the results
reported all the same), an unreachable endpoint (1) and a missing --base-url (2) are in
tests/eval/test_truncation.py; here the rest, against the help's own words.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from amux.cli.eval import eval_main
from amux.eval.live import EXIT_CONTEXT, EXIT_FAILED, EXIT_RAN
from tests.mockmodel import MockModel, Text
from tests.peers import npm_bin

pytestmark = pytest.mark.usefixtures("no_user_keys")  # the user's keys never reach the agent
MODEL = "qwen3:14b"


def help_text(capsys: pytest.CaptureFixture[str]) -> str:
    assert eval_main(["live", "--help"]) == 0
    return " ".join(capsys.readouterr().out.split())


def test_help_documents_each_exit_status(capsys: pytest.CaptureFixture[str]) -> None:
    text = help_text(capsys)
    statuses = re.findall(r"(?:: |; )(\d) (?:the|it|usage)", text)
    assert statuses == ["0", "1", "2", "3"]
    assert (EXIT_RAN, EXIT_FAILED, EXIT_CONTEXT) == (0, 1, 3)
    assert "0 the evaluation ran and its results stand" in text
    assert "the run finished but the endpoint's prompt counts show the prompt was " \
           "truncated" in text


def test_0_the_evaluation_ran(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with MockModel([Text("42")]) as model:
        code = eval_main(["live", "--agent", "claude", "--endpoint", model.url, "--model",
                          "mock-model", "--samples", "1", "--scenario", "ordinary",
                          "--agent-bin", str(npm_bin("claude")), "--timeout", "120"])
    captured = capsys.readouterr()
    assert code == 0, captured.out + captured.err
    assert re.search(r"^all +1/1 +100%", captured.out, re.MULTILINE)
    assert "  ordinary 1/1: correct (1 of 1 samples done, " in captured.err  # plain lines


def test_1_the_agent_is_not_found(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = eval_main(["live", "--agent", "pi", "--base-url", "http://127.0.0.1:9/v1",
                      "--model", MODEL, "--agent-bin", str(tmp_path / "no-such-pi")])
    assert code == 1
    assert capsys.readouterr().err.startswith("amux eval: pi not found: give --agent-bin")


@pytest.mark.parametrize("argv", [[], ["live"], ["live", "--agent", "nobody"],
                                  ["live", "--agent", "pi", "--base-url", "u", "--model", "m",
                                   "--samples", "0"]])
def test_2_usage(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert eval_main(argv) == 2
    assert "usage: amux eval" in capsys.readouterr().err



def test_1_a_json_file_that_cannot_be_written_is_refused_before_the_run(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Refused at once, not after minutes of sessions whose results it would lose."""
    blocker = tmp_path / "a-file"
    blocker.write_text("kept\n")
    for target in (blocker / "report.json", tmp_path):
        code = eval_main(["live", "--agent", "pi", "--base-url", "http://127.0.0.1:9/v1",
                          "--model", MODEL, "--json", str(target)])
        assert code == 1
        assert capsys.readouterr().err.startswith(f"amux eval: --json {target}: ")
    assert blocker.read_text() == "kept\n"


def test_the_endpoint_is_spelled_as_amux_run_spells_it() -> None:
    """`amux run --endpoint/--endpoint-key-env` and `amux eval live --base-url/--api-key-env`
    named one thing two ways: eval takes run's spelling, the old one as an alias."""
    from amux.cli.eval import _parser

    for url, key in (("--endpoint", "--endpoint-key-env"), ("--base-url", "--api-key-env")):
        args = _parser().parse_args(["live", "--agent", "pi", url, "http://x/v1", "--model",
                                     "m", key, "MY_KEY"])
        assert (args.base_url, args.api_key_env) == ("http://x/v1", "MY_KEY")
