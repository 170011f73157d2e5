"""`amux eval live` and context windows, against a fake Ollama: the refusal before the run
(naming the fix; the window itself is read by `amux.launcher.window`, tests/launcher/
test_window.py), and prompt counts pinned at the window after it."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from amux.cli.eval import eval_main
from amux.eval import truncation
from amux.eval.live import LiveOptions, run_live
from amux.launcher import window
from tests.mockmodel import Text
from tests.mockmodel.ollama import FakeOllama
from tests.peers import npm_bin

pytestmark = pytest.mark.usefixtures("no_user_keys")  # the user's keys never reach the agent
MODEL = "qwen3:14b"


def test_ollama_serving_a_smaller_window_than_the_prompt_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    claude = npm_bin("claude")
    with FakeOllama([Text("never asked")], model=MODEL, loaded=4096) as ollama:
        code = eval_main(["live", "--agent", "claude", "--base-url", ollama.url,
                          "--model", MODEL, "--agent-bin", str(claude),
                          "--json", str(tmp_path / "report.json")])
    printed = capsys.readouterr().out
    assert code == 3, printed
    assert not ollama.main(), "the refusal comes before any request reaches the model"
    assert [path for _, path, _ in ollama.api_calls] == [
        "/api/version", "/api/show", "/api/generate", "/api/ps"]
    report = json.loads((tmp_path / "report.json").read_text())
    refused = report["context"]["refused"]
    assert refused in printed and "results" not in report
    prompt = report["context"]["prompt"]["estimated_tokens"]
    assert prompt > 4096
    needed = window.suggested_window(prompt)
    assert refused.startswith(f"Ollama 0.12.6 serves {MODEL} with a context window of 4,096 "
                              "tokens (Ollama /api/ps context_length (loaded)), smaller than "
                              f"the first request claude sends, about {prompt:,} tokens (")
    assert f"amux eval: refusing to run: {refused}" in printed
    assert f"OLLAMA_CONTEXT_LENGTH={needed} ollama serve" in refused
    assert f"PARAMETER num_ctx {needed}" in refused
    assert f"--model {MODEL}-ctx{needed}" in refused


def test_prompt_counts_pinned_at_the_window_are_flagged(tmp_path: Path) -> None:
    out = io.StringIO()
    with FakeOllama([Text("42")], model=MODEL, num_ctx=16384, pin=16384) as ollama:
        code, report = run_live(LiveOptions(
            agent="claude", base_url=ollama.url, model=MODEL, samples=1,
            scenarios=("ordinary",), agent_bin=str(npm_bin("claude")), timeout=120, out=out,
            progress=io.StringIO()))
    assert code == 3 and report["exit_code"] == 3, out.getvalue()
    assert report["totals"]["samples"] == 1  # the run went ahead: the results are reported
    assert report["context"]["window"]["tokens"] == 16384
    assert report["context"]["window"]["source"] == "Ollama Modelfile num_ctx"
    assert report["context"]["refused"] is None  # the prompt fits: the run went ahead
    counted = report["context"]["reported_prompt_tokens"]
    assert counted["first_requests"] == [16384]
    assert "pinned at the 16,384-token window" in counted["pinned"]
    assert "do not measure the model" in out.getvalue()


def test_the_same_count_for_different_prompts_is_pinned_without_a_known_window() -> None:
    unknown = window.Window(None, "unknown")
    assert truncation.pinned([(40_000, 9_800), (44_000, 10_900)], unknown) is None
    flagged = truncation.pinned([(40_000, 4096), (52_000, 4096)], unknown)
    assert flagged is not None and "exactly 4,096 prompt tokens for 2 requests" in flagged
    short = truncation.pinned([(60_000, 2_000)], unknown)
    assert short is not None and "under half the estimate" in short


def test_an_endpoint_that_does_not_answer_stops_the_run(
        capsys: pytest.CaptureFixture[str]) -> None:
    code = eval_main(["live", "--agent", "pi", "--base-url", "http://127.0.0.1:9/v1",
                      "--model", MODEL, "--agent-bin", str(npm_bin("pi"))])
    assert code == 1
    assert "nothing answers at http://127.0.0.1:9" in capsys.readouterr().err
    assert eval_main(["live", "--agent", "pi", "--model", MODEL]) == 2  # no --base-url
