"""Context windows against a fake Ollama: the refusal before the run (naming the fix), the
window read from Ollama's own endpoints (and a Gemini API's model entry), and prompt counts
pinned at the window."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from amux.cli.eval import eval_main
from amux.eval import context
from amux.eval.live import LiveOptions, run_live
from amux.eval.loopback import LoopbackServer, QuietHandler
from amux.eval.model_apis import Size
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
    needed = context.suggested_window(prompt)
    assert "4,096-token context window (Ollama /api/ps context_length (loaded))" in refused
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


def test_ollama_window_sources(tmp_path: Path) -> None:
    with FakeOllama(model=MODEL, loaded=32768, num_ctx=8192) as ollama:
        loaded = context.probe(ollama.base_url, MODEL)
    assert (loaded.tokens, loaded.server, loaded.trained) == (32768, "ollama 0.12.6", 40960)
    with FakeOllama(model=MODEL, num_ctx=65536, trained=40960) as ollama:
        capped = context.probe(ollama.base_url, MODEL)
    assert capped.tokens == 40960 and "capped at the model's trained length" in capped.source
    with FakeOllama(model=MODEL) as ollama:
        assumed = context.probe(ollama.base_url, MODEL)
    assert assumed.tokens == 4096 and assumed.source.startswith("Ollama's default, assumed")
    size = Size(content_chars=60_000, instructions_chars=20_000, tools=20, tools_chars=30_000)
    refused = context.refusal("codex", MODEL, size, assumed)
    assert refused is not None and "OLLAMA_CONTEXT_LENGTH=24576 ollama serve" in refused
    too_long = context.refusal("codex", MODEL, Size(400_000, 0, 0, 0), capped)
    assert too_long is not None and "choose a model with a longer context" in too_long


def test_the_same_count_for_different_prompts_is_pinned_without_a_known_window() -> None:
    unknown = context.Window(None, "unknown")
    assert context.pinned([(40_000, 9_800), (44_000, 10_900)], unknown) is None
    flagged = context.pinned([(40_000, 4096), (52_000, 4096)], unknown)
    assert flagged is not None and "exactly 4,096 prompt tokens for 2 requests" in flagged
    short = context.pinned([(60_000, 2_000)], unknown)
    assert short is not None and "under half the estimate" in short


def test_an_endpoint_that_does_not_answer_stops_the_run(
        capsys: pytest.CaptureFixture[str]) -> None:
    code = eval_main(["live", "--agent", "pi", "--base-url", "http://127.0.0.1:9/v1",
                      "--model", MODEL, "--agent-bin", str(npm_bin("pi"))])
    assert code == 1
    assert "nothing answers at http://127.0.0.1:9" in capsys.readouterr().err
    assert eval_main(["live", "--agent", "pi", "--model", MODEL]) == 2  # no --base-url


def test_a_gemini_api_window_is_the_model_s_input_token_limit() -> None:
    seen: list[tuple[str, str | None]] = []

    class Handler(QuietHandler):
        def do_GET(self) -> None:
            seen.append((self.path, self.headers.get("x-goog-api-key")))
            found = self.path == "/v1beta/models/gemini-small"
            payload = json.dumps({"name": "models/gemini-small", "inputTokenLimit": 8192,
                                  "outputTokenLimit": 2048} if found else {}).encode()
            self.send_response(200 if found else 404)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    with LoopbackServer(Handler) as server:
        window = context.probe(server.url, "gemini-small", "sk-test", api="gemini")
        other = context.probe(server.url, "gemini-small", "sk-test", api="chat")
    assert (window.tokens, window.source) == (
        8192, "GET …/v1beta/models/gemini-small inputTokenLimit")
    assert ("/v1beta/models/gemini-small", "sk-test") in seen
    assert other.tokens is None  # only the Gemini API describes a model by its name
    refused = context.refusal("gemini", "gemini-small", Size(52_000, 31_000, 16, 20_000),
                              window)
    assert refused is not None and "serve the model with a larger context window" in refused
