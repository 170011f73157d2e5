"""The four model APIs (what an agent sends its model, and the answer) as the evaluation
reads them, and a canned reply for capture runs; the mock model (tests/mockmodel) reads
requests with the same functions.

- `anthropic` — Messages API (`POST …/v1/messages`): Claude Code.
- `responses` — OpenAI Responses API (`POST …/responses`): Codex.
- `chat` — OpenAI Chat Completions (`POST …/chat/completions`): Pi, OpenCode.
- `gemini` — the Gemini API (`POST …/models/NAME:generateContent`, one JSON document, and
  `…:streamGenerateContent?alt=sse`, `data:` lines with no event names and no `[DONE]`):
  Gemini CLI. Tool calls are `functionCall` parts of the model's turns in `contents`, their
  results `functionResponse` parts of the next user turn; the instructions are
  `systemInstruction`. Streaming is chosen by the path, not the body (`render_text`'s `path`).

From a request body: the tool calls the model made earlier in the conversation and the
results the agent sent back (the history every request carries), whether it lists tools,
and how large its content is. From a response (SSE or one JSON document): the prompt
token count the endpoint reports and the assistant's text. `render_text` answers a
request with a plain text reply, for the run that measures an agent's first request
without a model.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from amux.adapters.base import ModelApi

SSE = "text/event-stream"
JSON = "application/json"
CHARS_PER_TOKEN = 4
"""The estimate of prompt tokens from characters (English prose and JSON schemas run at
3.8–4.2 characters a token with common tokenizers)."""


@dataclass
class ToolCall:
    """One tool call of the model, with the agent's result when the history carries it."""

    call_id: str
    name: str
    """The name as the model called it; Responses namespaces are joined (`mcp__amux__x`)."""
    arguments: dict[str, Any]
    result: str | None = None
    is_error: bool = False


@dataclass
class Parsed:
    """What one response said: its text and the prompt tokens the endpoint counted."""

    text: str = ""
    prompt_tokens: int | None = None
    events: int = 0
    errors: list[str] = field(default_factory=list)


def api_for(path: str) -> ModelApi | None:
    """The model API a request path belongs to (a query string is ignored), or None."""
    path = path.partition("?")[0]
    if path.endswith((":generateContent", ":streamGenerateContent")):
        return "gemini"
    if path.endswith("/messages"):
        return "anthropic"
    if path.endswith("/responses"):
        return "responses"
    if path.endswith("/chat/completions"):
        return "chat"
    return None


def _arguments(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, str):
        try:
            value = json.loads(raw)
        except ValueError:
            return {"input": raw}
        return value if isinstance(value, dict) else {"input": value}
    return {} if raw is None else {"input": raw}


def _text(content: Any) -> str:
    """The text of a string or of the text parts of a content list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(part.get("text", "")) for part in content
                         if isinstance(part, dict) and "text" in part)
    return "" if content is None else json.dumps(content)


@dataclass(frozen=True)
class ToolResult:
    """A tool result the agent sent back: the id of the call it answers and its text."""

    call_id: str
    text: str
    is_error: bool = False


def tool_results(api: ModelApi, body: Any) -> list[ToolResult]:
    """Every tool result a request's history carries, oldest first (Gemini: the id as the
    model gave it, without Gemini CLI's `NAME__` prefix)."""
    if not isinstance(body, dict):
        return []
    results: list[ToolResult] = []
    if api == "anthropic":
        for message in body.get("messages") or []:
            content = message.get("content") if isinstance(message, dict) else None
            for block in content if isinstance(content, list) else []:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    results.append(ToolResult(str(block.get("tool_use_id")),
                                              _text(block.get("content")),
                                              bool(block.get("is_error"))))
    elif api == "responses":
        results += [ToolResult(str(item.get("call_id")), _text(item.get("output")))
                    for item in body.get("input") or []
                    if isinstance(item, dict) and str(item.get("type", "")).endswith("call_output")]
    elif api == "gemini":
        for content in body.get("contents") or []:
            for part in _parts(content):
                response = part.get("functionResponse")
                if isinstance(response, dict):
                    text, is_error = _gemini_result(response.get("response"))
                    results.append(ToolResult(gemini_call_id(response), text, is_error))
    else:
        results += [ToolResult(str(message.get("tool_call_id")), _text(message.get("content")))
                    for message in body.get("messages") or []
                    if isinstance(message, dict) and message.get("role") == "tool"]
    return results


def tool_calls(api: ModelApi, body: Any) -> list[ToolCall]:
    """The tool calls in a request's history, oldest first, with their results."""
    if not isinstance(body, dict):
        return []
    calls: dict[str, ToolCall] = {}
    if api == "anthropic":
        for message in body.get("messages") or []:
            content = message.get("content") if isinstance(message, dict) else None
            for block in content if isinstance(content, list) else []:
                if isinstance(block, dict) and block.get("type") == "tool_use":
                    call_id = str(block.get("id"))
                    calls[call_id] = ToolCall(call_id, str(block.get("name")),
                                              _arguments(block.get("input")))
    elif api == "responses":
        for item in body.get("input") or []:
            if not isinstance(item, dict):
                continue
            kind = str(item.get("type", ""))
            call_id = str(item.get("call_id"))
            if kind == "function_call":
                name = str(item.get("name"))
                namespace = item.get("namespace")
                if isinstance(namespace, str) and namespace:
                    name = f"{namespace}__{name}"
                calls[call_id] = ToolCall(call_id, name, _arguments(item.get("arguments")))
            elif kind == "custom_tool_call":
                calls[call_id] = ToolCall(call_id, str(item.get("name")),
                                          {"input": item.get("input")})
            elif kind == "local_shell_call":
                action = item.get("action") if isinstance(item.get("action"), dict) else {}
                command = action.get("command") if isinstance(action, dict) else None
                calls[call_id] = ToolCall(call_id, "local_shell", {"command": command})
    elif api == "gemini":
        return _gemini_calls(body)
    else:
        for message in body.get("messages") or []:
            if isinstance(message, dict) and message.get("role") == "assistant":
                for call in message.get("tool_calls") or []:
                    function = call.get("function") if isinstance(call, dict) else None
                    if isinstance(function, dict):
                        call_id = str(call.get("id"))
                        calls[call_id] = ToolCall(call_id, str(function.get("name")),
                                                  _arguments(function.get("arguments")))
    for result in tool_results(api, body):
        if result.call_id in calls:
            calls[result.call_id].result = result.text
            calls[result.call_id].is_error = result.is_error
    return list(calls.values())


def _parts(content: Any) -> list[dict[str, Any]]:
    parts = content.get("parts") if isinstance(content, dict) else None
    return [part for part in parts if isinstance(part, dict)] if isinstance(parts, list) else []


def _gemini_calls(body: dict[str, Any]) -> list[ToolCall]:
    """Gemini's `functionCall` parts (model turns) and `functionResponse` parts (the next
    user turn). Ids are optional in the Gemini API, and Gemini CLI 0.61.0 prefixes the
    model's id with `NAME__` in its response: a result answers the call with its id, else
    the oldest unanswered call of its name."""
    calls: list[ToolCall] = []
    by_id: dict[str, ToolCall] = {}
    for turn, content in enumerate(body.get("contents") or []):
        for number, part in enumerate(_parts(content)):
            call, response = part.get("functionCall"), part.get("functionResponse")
            if isinstance(call, dict) and isinstance(content, dict) \
                    and content.get("role") == "model":
                name = str(call.get("name"))
                call_id = str(call.get("id") or f"gemini_{turn}_{number}")
                found = ToolCall(call_id, name, _arguments(call.get("args")))
                calls.append(found)
                by_id.setdefault(call_id, found)
            elif isinstance(response, dict):
                name = str(response.get("name"))
                given = str(response.get("id") or "")
                answered = by_id.get(given) or by_id.get(given.removeprefix(f"{name}__"))
                if answered is None or answered.result is not None:
                    answered = next((c for c in calls if c.name == name and c.result is None),
                                    None)
                if answered is not None:
                    answered.result, answered.is_error = _gemini_result(response.get("response"))
    return calls


def gemini_call_id(response: dict[str, Any]) -> str:
    """The id of the call a `functionResponse` answers, as the model gave it: Gemini CLI
    0.61.0 prefixes it with `NAME__` (`processStreamResponse`); the prefix is removed."""
    given, name = str(response.get("id") or ""), str(response.get("name") or "")
    return given.removeprefix(f"{name}__") if name else given


def _gemini_result(response: Any) -> tuple[str, bool]:
    """A `functionResponse.response` as (text, is_error): its `output` or `error`."""
    if isinstance(response, dict):
        if "error" in response:
            error = response["error"]
            return (error if isinstance(error, str) else json.dumps(error)), True
        if isinstance(response.get("output"), str):
            return str(response["output"]), False
    return _text(response), False


def lists_tools(body: Any) -> bool:
    """Whether the request offers the model tools (side requests such as titles do not)."""
    return isinstance(body, dict) and bool(body.get("tools"))


_CONTENT_FIELDS: dict[ModelApi, tuple[str, ...]] = {
    "anthropic": ("system", "messages", "tools"),
    "responses": ("instructions", "input", "tools"),
    "chat": ("messages", "tools"),
    "gemini": ("systemInstruction", "contents", "tools"),
}


@dataclass(frozen=True)
class Size:
    """How large a request's prompt is: what the model has to read."""

    content_chars: int
    """Characters of its content fields (instructions, messages, tools) as compact JSON."""
    instructions_chars: int
    tools: int
    tools_chars: int

    @property
    def estimated_tokens(self) -> int:
        return math.ceil(self.content_chars / CHARS_PER_TOKEN)


def size(api: ModelApi, body: Any) -> Size:
    if not isinstance(body, dict):
        return Size(0, 0, 0, 0)

    def chars(value: Any) -> int:
        return 0 if value is None else len(json.dumps(value, ensure_ascii=False,
                                                     separators=(",", ":")))

    listed = body.get("tools")
    tools: list[Any] = listed if isinstance(listed, list) else []
    if api == "gemini":  # one entry holds every declaration: count those
        tools = [declaration for tool in tools if isinstance(tool, dict)
                 for declaration in tool.get("functionDeclarations") or []] or tools
    return Size(sum(chars(body.get(key)) for key in _CONTENT_FIELDS[api]),
                len(instructions(api, body)), len(tools), chars(tools))


def instructions(api: ModelApi, body: Any) -> str:
    """The agent's instruction channel: Claude's `system`, Codex's instructions and
    developer messages, the system message of a chat request, Gemini's
    `systemInstruction` (a content with text parts, or a plain string)."""
    if not isinstance(body, dict):
        return ""
    if api == "anthropic":
        return _text(body.get("system"))
    if api == "gemini":
        system = body.get("systemInstruction")
        if isinstance(system, str):
            return system
        return "\n".join(str(part["text"]) for part in _parts(system) if "text" in part)
    if api == "responses":
        parts = [_text(body.get("instructions"))] if body.get("instructions") else []
        parts += [_text(item.get("content")) for item in body.get("input") or []
                  if isinstance(item, dict) and item.get("role") in ("developer", "system")]
        return "\n\n".join(parts)
    messages = body.get("messages") or []
    return "\n\n".join(_text(m.get("content")) for m in messages
                       if isinstance(m, dict) and m.get("role") in ("system", "developer"))


# -- responses ---------------------------------------------------------------------------------


def _events(payload: bytes) -> Iterator[Any]:
    """The JSON data of each SSE event, or the one JSON document of a plain response."""
    text = payload.decode("utf-8", "replace")
    if not text.lstrip().startswith(("event:", "data:", ":")):
        try:
            yield json.loads(text)
        except ValueError:
            return
        return
    for block in text.replace("\r\n", "\n").split("\n\n"):
        data = "\n".join(line[5:].lstrip() for line in block.split("\n")
                         if line.startswith("data:"))
        if not data or data == "[DONE]":
            continue
        try:
            yield json.loads(data)
        except ValueError:
            continue


def _flattened(events: Iterator[Any]) -> Iterator[dict[str, Any]]:
    """The JSON objects of `events`, a JSON array's (Gemini's stream without `alt=sse`)
    taken one by one."""
    for event in events:
        for item in event if isinstance(event, list) else [event]:
            if isinstance(item, dict):
                yield item


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def parse_response(api: ModelApi, payload: bytes) -> Parsed:
    """The assistant text and the reported prompt tokens of one response."""
    parsed = Parsed()
    texts: list[str] = []
    handle: Callable[[dict[str, Any], Parsed, list[str]], None] = _HANDLERS[api]
    for event in _flattened(_events(payload)):
        parsed.events += 1
        if isinstance(event.get("error"), dict | str):
            parsed.errors.append(json.dumps(event["error"])[:500])
        handle(event, parsed, texts)
    parsed.text = "".join(texts)
    return parsed


def _anthropic(event: dict[str, Any], parsed: Parsed, texts: list[str]) -> None:
    usage: Any = None
    if event.get("type") == "message_start":
        usage = (event.get("message") or {}).get("usage")
    elif event.get("type") == "message_delta":
        usage = event.get("usage")
    elif event.get("type") == "message":  # not streamed
        usage = event.get("usage")
        texts.extend(str(block.get("text", "")) for block in event.get("content") or []
                     if isinstance(block, dict) and block.get("type") == "text")
    elif event.get("type") == "content_block_delta":
        delta = event.get("delta") or {}
        if delta.get("type") == "text_delta":
            texts.append(str(delta.get("text", "")))
    if isinstance(usage, dict) and "input_tokens" in usage:
        total = sum(_int(usage.get(key)) for key in (
            "input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"))
        parsed.prompt_tokens = max(parsed.prompt_tokens or 0, total)


def _responses(event: dict[str, Any], parsed: Parsed, texts: list[str]) -> None:
    response = event.get("response") if isinstance(event.get("response"), dict) else None
    if event.get("object") == "response":  # not streamed
        response = event
    if event.get("type") == "response.output_text.delta":
        texts.append(str(event.get("delta", "")))
    if response is not None and response.get("status") in ("completed", "incomplete",
                                                            "failed"):
        usage = response.get("usage")
        if isinstance(usage, dict) and "input_tokens" in usage:
            parsed.prompt_tokens = _int(usage.get("input_tokens"))
        if not texts:
            for item in response.get("output") or []:
                if isinstance(item, dict) and item.get("type") == "message":
                    texts.extend(str(part.get("text", "")) for part in item.get("content") or []
                                 if isinstance(part, dict))


def _chat(event: dict[str, Any], parsed: Parsed, texts: list[str]) -> None:
    usage = event.get("usage")
    if isinstance(usage, dict) and "prompt_tokens" in usage:
        parsed.prompt_tokens = _int(usage.get("prompt_tokens"))
    for choice in event.get("choices") or []:
        if not isinstance(choice, dict):
            continue
        part = choice.get("delta") or choice.get("message") or {}
        if isinstance(part, dict) and isinstance(part.get("content"), str):
            texts.append(part["content"])


def _gemini(event: dict[str, Any], parsed: Parsed, texts: list[str]) -> None:
    usage = event.get("usageMetadata")
    if isinstance(usage, dict) and "promptTokenCount" in usage:
        parsed.prompt_tokens = _int(usage.get("promptTokenCount"))
    for candidate in event.get("candidates") or []:
        if isinstance(candidate, dict):
            texts.extend(str(part["text"]) for part in _parts(candidate.get("content"))
                         if isinstance(part.get("text"), str) and not part.get("thought"))


_HANDLERS: dict[ModelApi, Callable[[dict[str, Any], Parsed, list[str]], None]] = {
    "anthropic": _anthropic, "responses": _responses, "chat": _chat, "gemini": _gemini,
}


# -- the canned reply of capture runs ------------------------------------------------------------


def sse(events: Sequence[tuple[str | None, Any]]) -> bytes:
    """Server-sent events: `event:` (when named) and `data:` lines (a string as is, else
    JSON), one blank line after each event."""
    return "".join((f"event: {name}\n" if name else "") + "data: "
                   + (data if isinstance(data, str) else json.dumps(data, ensure_ascii=False))
                   + "\n\n" for name, data in events).encode()


def render_text(api: ModelApi, body: Any, text: str, path: str = "") -> tuple[str, bytes]:
    """(content type, body) of a plain text answer to `body`, streamed when it asked to be
    (Gemini: when `path` is `…:streamGenerateContent`)."""
    request = body if isinstance(body, dict) else {}
    model = str(request.get("model", "capture"))
    stream = bool(request.get("stream"))
    tokens = size(api, request).estimated_tokens
    if api == "gemini":
        return _render_gemini(request, text, path.partition("?")[0].endswith(
            ":streamGenerateContent"), tokens)
    if api == "anthropic":
        usage = {"input_tokens": tokens, "output_tokens": 1}
        message = {"id": "msg_capture", "type": "message", "role": "assistant",
                   "model": model, "stop_reason": "end_turn", "stop_sequence": None}
        if not stream:
            return JSON, json.dumps({**message, "content": [{"type": "text", "text": text}],
                                     "usage": usage}).encode()
        return SSE, sse([
            ("message_start", {"type": "message_start", "message": {
                **message, "content": [], "stop_reason": None, "usage": usage}}),
            ("content_block_start", {"type": "content_block_start", "index": 0,
                                     "content_block": {"type": "text", "text": ""}}),
            ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                     "delta": {"type": "text_delta", "text": text}}),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            ("message_delta", {"type": "message_delta", "delta": {
                "stop_reason": "end_turn", "stop_sequence": None}, "usage": {"output_tokens": 1}}),
            ("message_stop", {"type": "message_stop"}),
        ])
    if api == "responses":
        part = {"type": "output_text", "text": text, "annotations": []}
        item = {"type": "message", "id": "msg_capture", "role": "assistant",
                "status": "completed", "content": [part]}
        response = {"id": "resp_capture", "object": "response", "created_at": int(time.time()),
                    "status": "completed", "model": model, "output": [item],
                    "usage": {"input_tokens": tokens, "output_tokens": 1,
                              "total_tokens": tokens + 1,
                              "input_tokens_details": {"cached_tokens": 0},
                              "output_tokens_details": {"reasoning_tokens": 0}}}
        if not stream:
            return JSON, json.dumps(response).encode()
        started = {**response, "status": "in_progress", "output": [], "usage": None}
        where = {"output_index": 0, "item_id": "msg_capture", "content_index": 0}
        events: list[tuple[str, dict[str, Any]]] = [
            ("response.created", {"response": started}),
            ("response.output_item.added", {"output_index": 0, "item": {
                **item, "status": "in_progress", "content": []}}),
            ("response.content_part.added", {**where, "part": {**part, "text": ""}}),
            ("response.output_text.delta", {**where, "delta": text}),
            ("response.output_text.done", {**where, "text": text}),
            ("response.content_part.done", {**where, "part": part}),
            ("response.output_item.done", {"output_index": 0, "item": item}),
            ("response.completed", {"response": response}),
        ]
        return SSE, sse([(name, {"type": name, "sequence_number": number, **data})
                          for number, (name, data) in enumerate(events)])
    base = {"id": "chatcmpl-capture", "created": int(time.time()), "model": model}
    usage = {"prompt_tokens": tokens, "completion_tokens": 1, "total_tokens": tokens + 1}
    if not stream:
        return JSON, json.dumps({**base, "object": "chat.completion", "usage": usage,
                                 "choices": [{"index": 0, "finish_reason": "stop", "message": {
                                     "role": "assistant", "content": text}}]}).encode()
    chunk = {**base, "object": "chat.completion.chunk"}
    return SSE, sse([
        (None, {**chunk, "choices": [{"index": 0, "finish_reason": None,
                                      "delta": {"role": "assistant", "content": text}}]}),
        (None, {**chunk, "choices": [{"index": 0, "finish_reason": "stop", "delta": {}}]}),
        (None, {**chunk, "choices": [], "usage": usage}),
        (None, "[DONE]"),
    ])


def json_instance(schema: Any, text: str) -> Any:
    """The smallest instance of a JSON schema (Gemini's upper-case types too): required
    properties only, the first enum value, `text` for strings, 1 for numbers."""
    if not isinstance(schema, dict):
        return text
    if schema.get("enum"):
        return schema["enum"][0]
    kind = str(schema.get("type", "object")).lower()
    if kind == "object":
        properties = schema.get("properties") or {}
        return {key: json_instance(properties.get(key), text)
                for key in schema.get("required") or []}
    return {"array": [], "boolean": False, "integer": 1, "number": 1,
            "null": None}.get(kind, text)


def gemini_answer_text(request: Any, text: str) -> str:
    """`text`, or when a Gemini request asks for JSON (`responseMimeType: application/json`:
    Gemini CLI's model router and other side requests retry any other answer) and `text` is
    not JSON, the smallest instance of its `responseJsonSchema` (else `responseSchema`)."""
    config = request.get("generationConfig") if isinstance(request, dict) else None
    if not isinstance(config, dict) or config.get("responseMimeType") != JSON:
        return text
    try:
        json.loads(text)
    except ValueError:
        schema = config.get("responseJsonSchema") or config.get("responseSchema")
        return json.dumps(json_instance(schema, text))
    return text


def _render_gemini(request: dict[str, Any], text: str, stream: bool,
                   tokens: int) -> tuple[str, bytes]:
    """A `GenerateContentResponse` with `text` (`gemini_answer_text`), streamed as two
    `data:` events: the part, then the finish reason with the usage."""
    content = {"role": "model", "parts": [{"text": gemini_answer_text(request, text)}]}
    usage = {"promptTokenCount": tokens, "candidatesTokenCount": 1,
             "totalTokenCount": tokens + 1}
    base = {"modelVersion": "capture", "responseId": "resp_capture"}
    done = {"candidates": [{"content": content, "finishReason": "STOP", "index": 0}],
            "usageMetadata": usage, **base}
    if not stream:
        return JSON, json.dumps(done).encode()
    return SSE, sse([
        (None, {"candidates": [{"content": content, "index": 0}], **base}),
        (None, {"candidates": [{"content": {"role": "model", "parts": []},
                                "finishReason": "STOP", "index": 0}],
                "usageMetadata": usage, **base}),
    ])
