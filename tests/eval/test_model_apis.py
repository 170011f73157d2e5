"""The Gemini API as the evaluation reads it, on request bodies shaped as Gemini CLI 0.61.0
sends them (docs/agent-findings-gemini.md §1) and on the scripted model's own answers
(tests/mockmodel's `Gemini`/`GeminiStream`): what test_live.py drives through the real CLI."""

from __future__ import annotations

import json
from typing import Any

import pytest

from amux.eval import model_apis
from tests.mockmodel import Text, ToolCall, mcp
from tests.mockmodel.apis import Gemini, GeminiStream

SYSTEM = "You are Gemini CLI, an autonomous CLI agent."
PROTOCOL = "Save to amux memory."
UPSERT = {"path": "MEMORY.md", "content": "# Memory\n", "expected_revision": "absent"}


def declarations(*names: str) -> list[dict[str, Any]]:
    return [{"functionDeclarations": [{"name": name, "parametersJsonSchema": {
        "type": "object"}} for name in names]}]


def history(response_id: str, call_id: str | None = "call_mock_0_0") -> dict[str, Any]:
    """A prompt, the model's upsert call, the CLI's answer to it (`response_id`), and the
    model's read that the agent refused."""
    call: dict[str, Any] = {"name": "mcp_amux_memory_upsert", "args": UPSERT}
    get: dict[str, Any] = {"name": "mcp_amux_memory_get", "args": {"path": "MEMORY.md"}}
    if call_id is not None:
        call["id"], get["id"] = call_id, "call_mock_0_1"
    return {
        "systemInstruction": {"role": "user", "parts": [{"text": SYSTEM}, {"text": PROTOCOL}]},
        "contents": [
            {"role": "user", "parts": [{"text": "<session_context>…</session_context>"},
                                       {"text": "Remember this."}]},
            {"role": "model", "parts": [{"functionCall": call,
                                         "thoughtSignature": "skip_thought_signature_validator"}]},
            {"role": "user", "parts": [{"functionResponse": {
                "id": response_id, "name": "mcp_amux_memory_upsert",
                "response": {"output": '<untrusted_context>\n{"revision": "abc"}\n'
                             '</untrusted_context>'}}}]},
            {"role": "model", "parts": [{"text": "Reading the index."}, {"functionCall": get}]},
            {"role": "user", "parts": [{"functionResponse": {
                "id": response_id.replace("upsert", "get").replace("0_0", "0_1"),
                "name": "mcp_amux_memory_get",
                "response": {"error": "Tool execution denied by policy."}}}]},
        ],
        "tools": declarations("read_file", "write_file", "mcp_amux_memory_upsert",
                              "mcp_amux_memory_get"),
        "generationConfig": {"temperature": 1},
    }


@pytest.mark.parametrize(("path", "expected"), [
    ("/v1beta/models/gemini-3.8-flash:streamGenerateContent?alt=sse", "gemini"),
    ("/v1beta/models/mock-model:streamGenerateContent", "gemini"),
    ("/v1beta/models/gemini-3.5-flash-lite:generateContent", "gemini"),
    ("/v1beta/models/mock-model:countTokens", None),
    ("/v1/messages", "anthropic"), ("/v1/responses", "responses"),
    ("/v1/chat/completions", "chat"),
])
def test_a_path_names_its_model_api(path: str, expected: str | None) -> None:
    assert model_apis.api_for(path) == expected


@pytest.mark.parametrize("response_id", [
    "call_mock_0_0",  # the model's id, as sent back without context management
    "mcp_amux_memory_upsert__call_mock_0_0",  # Gemini CLI's NAME__ prefix
])
def test_gemini_tool_calls_with_their_results(response_id: str) -> None:
    upsert, get = model_apis.tool_calls("gemini", history(response_id))
    assert (upsert.call_id, upsert.name, upsert.arguments) == (
        "call_mock_0_0", "mcp_amux_memory_upsert", UPSERT)
    assert upsert.result is not None and '"revision": "abc"' in upsert.result
    assert not upsert.is_error
    assert (get.name, get.arguments) == ("mcp_amux_memory_get", {"path": "MEMORY.md"})
    assert (get.result, get.is_error) == ("Tool execution denied by policy.", True)


def test_gemini_calls_without_ids_are_answered_in_order_by_name() -> None:
    """The Gemini API's ids are optional: a result then answers the oldest open call of its
    name."""
    upsert, get = model_apis.tool_calls("gemini", history("", call_id=None))
    assert upsert.call_id != get.call_id
    assert upsert.result is not None and not upsert.is_error
    assert get.is_error


def test_gemini_instructions_and_size() -> None:
    body = history("call_mock_0_0")
    assert model_apis.instructions("gemini", body) == f"{SYSTEM}\n{PROTOCOL}"
    assert model_apis.instructions("gemini", {"systemInstruction": "plain"}) == "plain"
    assert model_apis.instructions("gemini", {"contents": []}) == ""
    size = model_apis.size("gemini", body)
    assert size.tools == 4  # the declarations, not the one entry holding them
    assert size.instructions_chars == len(SYSTEM) + 1 + len(PROTOCOL)
    fields = [body["systemInstruction"], body["contents"], body["tools"]]
    assert size.content_chars == sum(len(json.dumps(f, ensure_ascii=False,
                                                    separators=(",", ":"))) for f in fields)
    assert model_apis.lists_tools(body)
    assert not model_apis.lists_tools({**body, "tools": []})  # the model router's side request


def test_parse_a_streamed_gemini_answer() -> None:
    body = history("call_mock_0_0")
    _, payload = GeminiStream.render(body, Text("Saved both facts."), "call_mock_0_2")
    assert payload.startswith(b"data: ") and b"[DONE]" not in payload
    parsed = model_apis.parse_response("gemini", payload)
    assert parsed.text == "Saved both facts."
    assert parsed.events == 2 and parsed.errors == []
    usage = json.loads(payload.split(b"\n\n")[1].removeprefix(b"data: "))["usageMetadata"]
    assert parsed.prompt_tokens == usage["promptTokenCount"] > 0
    _, called = GeminiStream.render(body, mcp("memory_search", {"query": "x"}), "c")
    assert model_apis.parse_response("gemini", called).text == ""  # a call, no text


def test_parse_gemini_json_thoughts_errors_and_arrays() -> None:
    _, payload = Gemini.render({"contents": []}, ToolCall("read_file", {}), "c")
    assert model_apis.parse_response("gemini", payload).prompt_tokens is not None
    chunk = {"candidates": [{"content": {"role": "model", "parts": [
        {"text": "thinking…", "thought": True}, {"text": "answer"}]}}],
        "usageMetadata": {"promptTokenCount": 7}}
    array = json.dumps([chunk, chunk]).encode()  # streamed without alt=sse
    assert model_apis.parse_response("gemini", array).text == "answeranswer"
    failed = model_apis.parse_response("gemini", b'{"error": {"code": 429, "message": "quota"}}')
    assert failed.errors and failed.text == ""


@pytest.mark.parametrize(("path", "content_type"), [
    ("/v1beta/models/m:streamGenerateContent", model_apis.SSE),
    ("/v1beta/models/m:generateContent", model_apis.JSON),
])
def test_render_text_round_trip(path: str, content_type: str) -> None:
    body = history("call_mock_0_0")
    kind, payload = model_apis.render_text("gemini", body, "ok", path)
    assert kind == content_type
    parsed = model_apis.parse_response("gemini", payload)
    assert parsed.text == "ok"
    assert parsed.prompt_tokens == model_apis.size("gemini", body).estimated_tokens
    first = payload
    if kind == model_apis.SSE:  # what Gemini CLI reads: data lines, no event names, no [DONE]
        blocks = payload.split(b"\n\n")
        assert blocks[-1] == b"" and all(b.startswith(b"data: {") for b in blocks[:-1])
        first = blocks[0].removeprefix(b"data: ")
    # the model's turn as the CLI sends it back in the history: no call left open
    turn = json.loads(first)["candidates"][0]["content"]
    assert turn == {"role": "model", "parts": [{"text": "ok"}]}
    assert Gemini.trailing_call_ids({"contents": [*body["contents"], turn]}) == []


def test_render_text_answers_a_json_request_with_its_schema() -> None:
    """Gemini CLI's model router asks for JSON and retries anything else (98 s)."""
    router = {"contents": [{"role": "user", "parts": [{"text": "route"}]}],
              "generationConfig": {"responseMimeType": "application/json",
                                   "responseJsonSchema": {
                                       "type": "object",
                                       "properties": {
                                           "complexity_reasoning": {"type": "string"},
                                           "complexity_score": {"type": "integer"},
                                           "unrequired": {"type": "string"}},
                                       "required": ["complexity_reasoning",
                                                    "complexity_score"]}}}
    _, payload = model_apis.render_text("gemini", router, "ok",
                                  "/v1beta/models/flash-lite:generateContent")
    text = model_apis.parse_response("gemini", payload).text
    assert json.loads(text) == {"complexity_reasoning": "ok", "complexity_score": 1}
    _, payload = model_apis.render_text("gemini", router, '{"already": "json"}', "")
    assert model_apis.parse_response("gemini", payload).text == '{"already": "json"}'
