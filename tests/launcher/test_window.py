"""The model's context window against the agent's first request (`amux.launcher.window`):
what each kind of server says (a fake Ollama, llama.cpp's `/props`, vLLM's `max_model_len`, a
Gemini API's `inputTokenLimit`, nothing), bounded questions that keep the key for its
endpoint, and `amux run --endpoint` with scripted agents: refused before anything starts
when the window is too small (the numbers and the fix in one line), launched when it fits,
one line when it cannot be told. tests/e2e/test_window.py does the same with the real
agents."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path
from typing import Any

import pytest

from amux.adapters import ADAPTERS
from amux.eval.loopback import LoopbackServer, QuietHandler
from amux.launcher import window
from tests.hubproc import HubProcess
from tests.launcher.fakeagents import Launcher, enable
from tests.mockmodel import MockModel, Text
from tests.mockmodel.ollama import FakeOllama
from tests.mockmodel.servers import llama_cpp, vllm

MODEL = "qwen3:14b"
CODEX = ADAPTERS["codex"].first_request
assert CODEX is not None
CODEX_TOKENS = CODEX.memory.tokens  # 11,744 at Codex 0.171.0 (protocol v2)


def prompt(tokens: int, memory: bool = True) -> window.Prompt:
    return window.Prompt("codex", tokens, "measured", memory)


# -- what each server says ----------------------------------------------------------------


@pytest.mark.timeout(60)
def test_ollama_window_sources() -> None:
    with FakeOllama(model=MODEL, loaded=32768, num_ctx=8192) as ollama:
        loaded = window.probe(ollama.base_url, MODEL, "openai")
    assert (loaded.tokens, loaded.server, loaded.trained) == (32768, "ollama 0.12.6", 40960)
    assert loaded.source == "Ollama /api/ps context_length (loaded)"
    with FakeOllama(model=MODEL, num_ctx=65536, trained=40960) as ollama:
        capped = window.probe(ollama.base_url, MODEL, "openai")
    assert capped.tokens == 40960 and "capped at the model's trained length" in capped.source
    with FakeOllama(model=MODEL) as ollama:
        assumed = window.probe(ollama.base_url, MODEL, "openai")
        missing = window.probe(ollama.base_url, "llama9", "openai")
    assert assumed.tokens == 4096 and assumed.source.startswith("Ollama's default, assumed")
    assert (missing.tokens, missing.source) == (
        None, "Ollama has no model llama9 (`ollama pull llama9`)")


@pytest.mark.timeout(60)
def test_a_look_that_loads_nothing_reads_what_is_loaded_or_set() -> None:
    """A dry run loads no model: a loaded one's window, or the Modelfile's, is still known."""
    with FakeOllama(model=MODEL, loaded=4096) as ollama:
        before = window.probe(ollama.url, MODEL, "anthropic", load_seconds=None)
        ollama.is_loaded = True
        after = window.probe(ollama.url, MODEL, "anthropic", load_seconds=None)
    assert "/api/generate" not in [path for _, path, _ in ollama.api_calls]
    assert (before.tokens, before.source) == (
        None, f"Ollama has not loaded {MODEL} yet, and a dry run loads no model")
    assert after.tokens == 4096
    with FakeOllama(model=MODEL, num_ctx=8192) as ollama:
        set_ = window.probe(ollama.url, MODEL, "anthropic", load_seconds=None)
    assert (set_.tokens, set_.source) == (8192, "Ollama Modelfile num_ctx")


@pytest.mark.timeout(60)
def test_llama_cpp_and_vllm_windows() -> None:
    with MockModel(routes=llama_cpp(8192, slots=4)) as server:
        slot = window.probe(server.base_url, "any", "openai")
    assert (slot.tokens, slot.server, slot.slots) == (8192, "llama.cpp", 4)
    assert slot.source == "llama.cpp GET /props default_generation_settings.n_ctx"
    with MockModel(routes=llama_cpp(16384, top_level=True)) as server:
        top = window.probe(server.base_url, "any", "openai")
    assert (top.tokens, top.source) == (16384, "llama.cpp GET /props n_ctx")
    with MockModel(routes=vllm("Qwen/Qwen3-8B", 8192)) as server:
        served = window.probe(server.base_url, "Qwen/Qwen3-8B", "openai")
        other = window.probe(server.base_url, "another", "openai")
    assert (served.tokens, served.server, served.source) == (
        8192, "vllm", "GET …/models max_model_len")
    assert other.tokens is None

    refused = window.refusal("any", prompt(CODEX_TOKENS), slot)
    assert refused is not None and refused.startswith(
        "llama.cpp's server serves any with a context window of 8,192 tokens (llama.cpp GET "
        f"/props default_generation_settings.n_ctx), smaller than the first request codex "
        f"sends, about {CODEX_TOKENS:,} tokens (measured). ")
    assert refused.endswith("Fix: restart llama-server with --ctx-size 24576 (each of its 4 "
                            "slots gets a share: --ctx-size 98304, or --parallel 1 "
                            "--ctx-size 24576)")
    refused = window.refusal("Qwen/Qwen3-8B", prompt(CODEX_TOKENS), served)
    assert refused is not None and refused.startswith("vLLM serves Qwen/Qwen3-8B with a "
                                                      "context window of 8,192 tokens")
    assert "restart vLLM with --max-model-len 24576 if Qwen/Qwen3-8B holds that many" in refused


@pytest.mark.timeout(60)
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
        found = window.probe(server.url, "gemini-small", "gemini", "sk-test")
        other = window.probe(server.url, "gemini-small", "openai", "sk-test")
    assert (found.tokens, found.source) == (
        8192, "GET …/v1beta/models/gemini-small inputTokenLimit")
    assert ("/v1beta/models/gemini-small", "sk-test") in seen
    assert other.tokens is None  # only the Gemini API describes a model by its name
    refused = window.refusal("gemini-small", prompt(13_000), found)
    assert refused is not None and "serve the model with a larger context window" in refused


@pytest.mark.timeout(60)
def test_nothing_said_is_unknown() -> None:
    with MockModel() as server:
        silent = window.probe(server.base_url, "mock-model", "openai")
    assert (silent.tokens, silent.source) == (None, "the endpoint reports no context window")
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    gone = window.probe(f"http://127.0.0.1:{port}/v1", "m", "openai")
    assert (gone.tokens, gone.source) == (None, f"nothing answered at http://127.0.0.1:{port}")
    said = window.unknown("m", prompt(CODEX_TOKENS), silent)
    assert said == ("the context window m gets could not be told (the endpoint reports no "
                    f"context window); if it holds fewer than about {CODEX_TOKENS:,} tokens "
                    "(the first request codex sends), the model will not see the start of the "
                    "prompt: the agent's instructions and the memory protocol")


def test_the_fix_names_what_outranks_what() -> None:
    """A Modelfile's num_ctx outranks OLLAMA_CONTEXT_LENGTH: only a new model helps; a model
    trained shorter than the prompt cannot be helped; without memory, no protocol is lost."""
    set_ = window.Window(8192, "Ollama Modelfile num_ctx", "ollama 0.12.6", num_ctx=8192)
    refused = window.refusal(MODEL, prompt(CODEX_TOKENS), set_)
    assert refused is not None and "OLLAMA_CONTEXT_LENGTH" not in refused.replace(
        "outranks the server's OLLAMA_CONTEXT_LENGTH", "")
    assert (f"{MODEL}'s Modelfile sets num_ctx 8192, which outranks the server's "
            f"OLLAMA_CONTEXT_LENGTH, so create a model with num_ctx 24576: printf 'FROM "
            f"{MODEL}\\nPARAMETER num_ctx 24576\\n' > Modelfile && ollama create "
            f"{MODEL}-ctx24576 -f Modelfile, and use --model {MODEL}-ctx24576") in refused
    short = window.Window(4096, "Ollama's default, assumed", "ollama 0.12.6", trained=8192)
    too_long = window.refusal(MODEL, prompt(CODEX_TOKENS), short)
    assert too_long is not None and too_long.endswith(
        f"{MODEL} holds at most 8,192 tokens (its trained context length): no setting makes "
        "the prompt fit; choose a model with a longer context")
    plain = window.refusal(MODEL, prompt(CODEX_TOKENS, memory=False),
                           window.Window(4096, "x", "ollama 0.12.6"))
    assert plain is not None and "the agent's instructions would never reach" in plain
    assert window.refusal(MODEL, prompt(4096), window.Window(4096, "x")) is None
    assert window.tight(prompt(4000), window.Window(4096, "x")) is not None
    assert window.tight(prompt(3000), window.Window(4096, "x")) is None


def test_each_agent_s_first_request_is_its_adapter_s_measure() -> None:
    for adapter in ADAPTERS.values():
        known = adapter.first_request
        assert known is not None, adapter.name
        with_memory = window.first_request(adapter, True)
        assert with_memory is not None and with_memory.tokens == known.memory.tokens
        assert with_memory.measured == (
            f"{adapter.display_name} {known.version} at its defaults with amux memory, "
            f"measured: {known.memory.chars:,} characters at 4 a token")
        without = window.first_request(adapter, False)
        assert without is not None and not without.memory
        assert without.tokens == known.plain.tokens


# -- the questions: bounded, the key kept for its endpoint ----------------------------------


class Recorder(QuietHandler):
    """Records (path, Authorization) and answers 404, or a redirect for `/v1/models`."""

    seen: list[tuple[str, str | None]]
    redirect: str | None = None

    def do_GET(self) -> None:
        self.seen.append((self.path, self.headers.get("Authorization")))
        if self.path == "/v1/models" and self.redirect:
            self.send_response(302)
            self.send_header("Location", self.redirect)
        else:
            self.send_response(404)
        self.send_header("Content-Length", "0")
        self.end_headers()


def recorder(redirect: str | None = None) -> tuple[type[Recorder], list[tuple[str, str | None]]]:
    seen: list[tuple[str, str | None]] = []
    return type("Recording", (Recorder,), {"seen": seen, "redirect": redirect}), seen


@pytest.mark.timeout(60)
def test_the_key_goes_with_the_endpoint_s_own_questions_only() -> None:
    """The key is sent under the endpoint's URL (`…/models`), never to the host's other
    paths, and never after a redirect; the URL's user and password go to its host."""
    elsewhere, seen_elsewhere = recorder()
    with LoopbackServer(elsewhere) as other:
        endpoint, seen = recorder(redirect=f"{other.url}/v1/models")
        with LoopbackServer(endpoint) as server:
            found = window.probe(f"{server.url}/v1", "m", "openai", "sk-secret")
            with_user = window.probe(server.url.replace("://", "://me:pw@") + "/v1", "m",
                                     "openai")
    assert found.tokens is None and with_user.tokens is None
    keyed = {path for path, authorization in seen if authorization == "Bearer sk-secret"}
    assert keyed == {"/v1/models"}
    assert ("/api/version", None) in seen and ("/props", None) in seen
    assert seen_elsewhere == []  # the redirect was not followed
    assert {authorization for _, authorization in seen[-3:]} == {"Basic bWU6cHc="}


@pytest.mark.timeout(60)
def test_a_server_that_never_answers_costs_a_bounded_wait() -> None:
    with socket.create_server(("127.0.0.1", 0)) as listener:  # accepts, never answers
        listener.listen(16)
        port = listener.getsockname()[1]
        started = time.monotonic()
        found = window.probe(f"http://127.0.0.1:{port}/v1", "m", "openai", ask_seconds=0.5)
        took = time.monotonic() - started
    assert found.tokens is None and took < 1.5, took


# -- `amux run --endpoint` with scripted agents ---------------------------------------------


@pytest.fixture
def launcher(hub: HubProcess, tmp_path: Path) -> Launcher:
    enable(hub)
    return Launcher(hub.home, tmp_path)


def window_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "window" in line]


def launched(launcher: Launcher) -> list[dict[str, Any]]:
    """The agent's launches (not the Codex adapter asking `codex app-server` for its
    config while it plans)."""
    if not launcher.log.exists():
        return []
    return [record for record in launcher.records() if record["argv"][:1] != ["app-server"]]


@pytest.mark.timeout(120)
@pytest.mark.parametrize("agent", ["claude", "codex"])
def test_a_window_smaller_than_the_first_request_is_refused_before_the_agent_starts(
        launcher: Launcher, agent: str) -> None:
    known = ADAPTERS[agent].first_request
    assert known is not None
    tokens, needed = known.memory.tokens, window.suggested_window(known.memory.tokens)
    with FakeOllama([Text("never asked")], model=MODEL, loaded=4096) as ollama:
        url = ollama.url if agent == "claude" else ollama.base_url
        done = launcher.run("--endpoint", url, "--model", MODEL, agent, "--", "-p", "hi")
    assert done.returncode == 2, done.stderr
    [line] = done.stderr.splitlines()
    display = ADAPTERS[agent].display_name
    assert line == (
        f"amux run: invalid_argument: --endpoint {url}: Ollama 0.12.6 serves {MODEL} with a "
        "context window of 4,096 tokens (Ollama /api/ps context_length (loaded)), smaller "
        f"than the first request {agent} sends, about {tokens:,} tokens ({display} "
        f"{known.version} at its defaults with amux memory, measured: {known.memory.chars:,} "
        "characters at 4 a token). Ollama's OpenAI- and Anthropic-compatible endpoints ignore "
        "a per-request num_ctx and silently drop the start of a longer prompt: the agent's "
        "instructions and the memory protocol would never reach the model. Fix, a window of "
        f"{needed:,} tokens: restart Ollama with OLLAMA_CONTEXT_LENGTH={needed} ollama serve, "
        f"or create a model with num_ctx {needed}: printf 'FROM {MODEL}\\nPARAMETER num_ctx "
        f"{needed}\\n' > Modelfile && ollama create {MODEL}-ctx{needed} -f Modelfile, and "
        f"use --model {MODEL}-ctx{needed}; then launch again (`--no-window-check` launches "
        "anyway)")
    assert launched(launcher) == [] and launcher.sessions() == []  # nothing started
    assert ollama.main() == []


@pytest.mark.timeout(120)
def test_a_window_that_holds_the_first_request_launches(launcher: Launcher) -> None:
    """Pi's first request (about 1,800 tokens) fits Ollama's default; Codex's fits 65,536
    (capped at the model's 40,960); a tight fit launches with one warning."""
    with FakeOllama([Text("ok")], model=MODEL, loaded=4096) as ollama:
        pi = launcher.run("--endpoint", ollama.base_url, "--model", MODEL, "pi", "--",
                          "-p", "hi")
        ollama.loaded = 65536
        codex = launcher.run("--endpoint", ollama.base_url, "--model", MODEL, "codex", "--",
                             "exec", "hi")
        ollama.loaded = CODEX_TOKENS + 1000
        tight = launcher.run("--endpoint", ollama.base_url, "--model", MODEL, "codex", "--",
                             "exec", "hi")
    for done in (pi, codex, tight):
        assert done.returncode == 0, done.stderr
    assert window_lines(pi.stderr) == window_lines(codex.stderr) == []
    assert window_lines(tight.stderr) == [
        f"amux run: warning: --endpoint {ollama.base_url}: the first request codex sends "
        f"(about {CODEX_TOKENS:,} tokens) nearly fills the {CODEX_TOKENS + 1000:,}-token "
        "window: tool results may push it over"]
    assert len(launched(launcher)) == 3


@pytest.mark.timeout(120)
def test_llama_cpp_and_vllm_stand_ins_are_checked(launcher: Launcher) -> None:
    for routes, fix in ((llama_cpp(8192), "restart llama-server with --ctx-size 24576"),
                        (vllm("m", 8192), "restart vLLM with --max-model-len 24576")):
        with MockModel([Text("ok")], routes=routes) as server:
            done = launcher.run("--endpoint", server.base_url, "--model", "m", "codex", "--",
                                "exec", "hi")
        assert done.returncode == 2, done.stderr
        assert "with a context window of 8,192 tokens" in done.stderr and fix in done.stderr
    for routes in (llama_cpp(32768), vllm("m", 32768)):
        with MockModel([Text("ok")], routes=routes) as server:
            done = launcher.run("--endpoint", server.base_url, "--model", "m", "codex", "--",
                                "exec", "hi")
        assert done.returncode == 0 and window_lines(done.stderr) == [], done.stderr
    assert len(launched(launcher)) == 2  # only the launches that fit


@pytest.mark.timeout(120)
def test_a_window_that_cannot_be_told_is_said_once_and_the_agent_launches(
        launcher: Launcher) -> None:
    with MockModel([Text("ok")]) as server:
        done = launcher.run("--endpoint", server.base_url, "--model", "m", "codex", "--",
                            "exec", "hi")
    assert done.returncode == 0, done.stderr
    assert window_lines(done.stderr) == [
        f"amux run: warning: --endpoint {server.base_url}: the context window m gets could "
        "not be told (the endpoint reports no context window); if it holds fewer than about "
        f"{CODEX_TOKENS:,} tokens (the first request codex sends), the model will not see "
        "the start of the prompt: the agent's instructions and the memory protocol"]
    assert len(launched(launcher)) == 1


@pytest.mark.timeout(120)
def test_a_dry_run_shows_the_window_and_loads_no_model(launcher: Launcher) -> None:
    with FakeOllama([Text("ok")], model=MODEL, loaded=4096) as ollama:
        dry = launcher.run("--dry-run", "--endpoint", ollama.base_url, "--model", MODEL,
                           "codex", "--", "exec", "hi")
        asked = [path for _, path, _ in ollama.api_calls]
        ollama.is_loaded = True  # what it learns without loading is enough to refuse
        refused = launcher.run("--dry-run", "--endpoint", ollama.base_url, "--model", MODEL,
                               "codex", "--", "exec", "hi")
    assert dry.returncode == 0, dry.stderr
    assert asked == ["/api/version", "/api/show", "/api/ps"]
    shown: dict[str, Any] = json.loads(dry.stdout)["window"]
    assert shown["tokens"] is None and shown["server"] == "ollama 0.12.6"
    assert shown["source"] == f"Ollama has not loaded {MODEL} yet, and a dry run loads no model"
    assert shown["first_request_tokens"] == CODEX_TOKENS
    assert shown["said"].startswith(f"the context window {MODEL} gets could not be told")
    assert refused.returncode == 2 and "context window of 4,096 tokens" in refused.stderr
    assert launched(launcher) == []


@pytest.mark.timeout(120)
def test_no_window_check_asks_nothing(launcher: Launcher) -> None:
    with FakeOllama([Text("ok")], model=MODEL, loaded=4096) as ollama:
        done = launcher.run("--endpoint", ollama.base_url, "--model", MODEL,
                            "--no-window-check", "codex", "--", "exec", "hi")
    assert done.returncode == 0, done.stderr
    assert ollama.api_calls == [] and window_lines(done.stderr) == []
    alone = launcher.run("--no-window-check", "codex", "--", "exec", "hi")
    assert alone.returncode == 2
    assert alone.stderr.startswith("amux run: invalid_argument: --no-window-check only "
                                   "applies with --endpoint")


@pytest.mark.timeout(120)
def test_a_resume_checks_again(launcher: Launcher) -> None:
    """The server may have been restarted with another window since the session began."""
    with FakeOllama([Text("ok")], model=MODEL, loaded=32768) as ollama:
        first = launcher.run("--endpoint", ollama.url, "--model", MODEL, "claude", "--",
                             "-p", "hi")
        assert first.returncode == 0, first.stderr
        [session] = [path.name for path in launcher.sessions()]
        ollama.loaded = 4096
        refused = launcher.run("--resume", session)
        resumed = launcher.run("--resume", session, "--no-window-check")
    assert refused.returncode == 2
    assert refused.stderr.startswith(
        f"amux run: invalid_argument: session {session}'s --endpoint {ollama.url}: "
        f"Ollama 0.12.6 serves {MODEL} with a context window of 4,096 tokens")
    assert refused.stderr.rstrip().endswith(
        "then resume again (`--no-window-check` launches anyway)")
    assert resumed.returncode == 0, resumed.stderr
    assert len(launched(launcher)) == 2


@pytest.mark.timeout(120)
def test_without_memory_the_agent_s_own_request_is_checked(hub: HubProcess,
                                                           launcher: Launcher) -> None:
    enable(hub, False)
    known = ADAPTERS["codex"].first_request
    assert known is not None
    with FakeOllama([Text("ok")], model=MODEL, loaded=4096) as ollama:
        done = launcher.run("--endpoint", ollama.base_url, "--model", MODEL, "codex", "--",
                            "exec", "hi")
    assert done.returncode == 2
    assert (f"about {known.plain.tokens:,} tokens (Codex {known.version} at its defaults "
            "without amux memory") in done.stderr
    assert "the agent's instructions would never reach the model" in done.stderr


@pytest.mark.timeout(120)
def test_the_endpoint_s_key_reaches_its_models_listing(launcher: Launcher) -> None:
    with MockModel([Text("ok")], routes=vllm("m", 32768)) as server:
        done = launcher.run("--endpoint", server.base_url, "--model", "m",
                            "--endpoint-key-env", "MY_KEY", "codex", "--", "exec", "hi",
                            env={"MY_KEY": "sk-mine"})
    assert done.returncode == 0, done.stderr
    asked = {(r.path, r.headers.get("authorization")) for r in server.requests
             if r.api is None and r.method == "GET"}
    assert ("/v1/models", "Bearer sk-mine") in asked
    assert all(authorization is None for path, authorization in asked
               if path in ("/api/version", "/props"))
