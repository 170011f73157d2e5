"""The model APIs the agents speak, as the mock serves them: where, and a step streamed back.

- `Anthropic` — Messages API (`POST /v1/messages`), Claude Code.
- `Responses` — OpenAI Responses API (`POST /v1/responses`), Codex.
- `Chat` — OpenAI Chat Completions (`POST /v1/chat/completions`), Pi.
- `Gemini` — Gemini API (`POST /v1beta/models/{model}:generateContent`, one JSON document) and
  `GeminiStream` (`…:streamGenerateContent?alt=sse`, SSE), Gemini CLI with an API key.

Each class reads a parsed request body (the instruction texts, part by part; the ids of the
tool results that end it) and renders one step as the response body the agent expects: SSE
when the request asked for `stream: true`, one JSON document otherwise. What every reader of
these APIs knows (the tool results a history carries, whether tools are offered, Gemini's
JSON answers, SSE framing) is the product's `amux.eval.model_apis`; here is what only the mock
needs: the paths it serves, its matching rule's trailing ids, scripted steps rendered.
"""

from __future__ import annotations

import json
import re
import time
from typing import Any, ClassVar

from amux.adapters.base import ModelApi
from amux.eval.model_apis import (
    JSON,
    SSE,
    ToolResult,
    gemini_answer_text,
    gemini_call_id,
    sse,
    tool_results,
)
from tests.mockmodel.script import Step, ToolCall


def _texts(content: Any, types: tuple[str, ...]) -> list[str]:
    """The text of a string or of the text parts (of the given types) of a content list."""
    if isinstance(content, str):
        return [content]
    if isinstance(content, list):
        return [str(part.get("text", "")) for part in content
                if isinstance(part, dict) and part.get("type") in types]
    return []


def _estimate_tokens(body: Any) -> int:
    return max(1, len(json.dumps(body, ensure_ascii=False)) // 4)


class Api:
    """One model API; subclasses fill in the details."""

    name: ClassVar[ModelApi]
    paths: ClassVar[tuple[str, ...]]

    @classmethod
    def serves(cls, path: str) -> bool:
        """Whether the mock answers `path` (query string removed) with this API."""
        return path in cls.paths

    @staticmethod
    def instructions(body: Any) -> list[str]:
        raise NotImplementedError

    @classmethod
    def tool_results(cls, body: Any) -> list[ToolResult]:
        """Every tool result the request carries (`amux.eval.model_apis.tool_results`)."""
        return tool_results(cls.name, body)

    @staticmethod
    def trailing_call_ids(body: Any) -> list[str]:
        """Ids of the tool results that end the request (empty: it starts a new user turn)."""
        raise NotImplementedError

    @staticmethod
    def render(body: Any, step: Step, call_id: str) -> tuple[str, bytes]:
        """(content type, response body) answering `body` with `step`."""
        raise NotImplementedError


class Anthropic(Api):
    name = "anthropic"
    paths = ("/v1/messages",)

    @staticmethod
    def instructions(body: Any) -> list[str]:
        return _texts(body.get("system"), ("text",))

    @staticmethod
    def trailing_call_ids(body: Any) -> list[str]:
        messages = body.get("messages") or []
        if not messages or messages[-1].get("role") != "user":
            return []
        content = messages[-1].get("content")
        if not isinstance(content, list):
            return []
        return [str(block.get("tool_use_id")) for block in content
                if isinstance(block, dict) and block.get("type") == "tool_result"]

    @staticmethod
    def render(body: Any, step: Step, call_id: str) -> tuple[str, bytes]:
        model = str(body.get("model", "mock-model"))
        usage = {"input_tokens": _estimate_tokens(body), "output_tokens": 1,
                 "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
        if isinstance(step, ToolCall):
            block: dict[str, Any] = {"type": "tool_use", "id": call_id,
                                     "name": step.claude_name(), "input": {}}
            delta = {"type": "input_json_delta", "partial_json": step.arguments_json()}
            final_block = {**block, "input": step.arguments}
            stop = "tool_use"
        else:
            block = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": step.text}
            final_block = {"type": "text", "text": step.text}
            stop = "end_turn"
        message_id = f"msg_{call_id}"
        if not body.get("stream"):
            return JSON, json.dumps({
                "id": message_id, "type": "message", "role": "assistant", "model": model,
                "content": [final_block], "stop_reason": stop, "stop_sequence": None,
                "usage": {**usage, "output_tokens": 5}}).encode()
        return SSE, sse([
            ("message_start", {"type": "message_start", "message": {
                "id": message_id, "type": "message", "role": "assistant", "model": model,
                "content": [], "stop_reason": None, "stop_sequence": None, "usage": usage}}),
            ("content_block_start", {"type": "content_block_start", "index": 0,
                                     "content_block": block}),
            ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                     "delta": delta}),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            ("message_delta", {"type": "message_delta",
                               "delta": {"stop_reason": stop, "stop_sequence": None},
                               "usage": {"output_tokens": 5}}),
            ("message_stop", {"type": "message_stop"}),
        ])


class Responses(Api):
    name = "responses"
    paths = ("/v1/responses",)

    @staticmethod
    def instructions(body: Any) -> list[str]:
        texts = []
        for item in body.get("input") or []:
            if isinstance(item, dict) and item.get("role") == "developer":
                texts.extend(_texts(item.get("content"), ("input_text", "text")))
        return texts

    @staticmethod
    def trailing_call_ids(body: Any) -> list[str]:
        ids = []
        for item in reversed(body.get("input") or []):
            if not (isinstance(item, dict) and str(item.get("type", "")).endswith("call_output")):
                break
            ids.append(str(item.get("call_id")))
        return ids[::-1]

    @staticmethod
    def render(body: Any, step: Step, call_id: str) -> tuple[str, bytes]:
        model = str(body.get("model", "mock-model"))
        response_id = f"resp_{call_id}"
        created = int(time.time())
        prompt = _estimate_tokens(body)
        usage = {"input_tokens": prompt, "input_tokens_details": {"cached_tokens": 0},
                 "output_tokens": 5, "output_tokens_details": {"reasoning_tokens": 0},
                 "total_tokens": prompt + 5}
        events: list[tuple[str | None, Any]] = []
        if isinstance(step, ToolCall):
            item: dict[str, Any] = {"type": "function_call", "id": f"fc_{call_id}",
                                    "call_id": call_id, "name": step.name,
                                    "arguments": step.arguments_json(), "status": "completed"}
            if step.namespace():
                item["namespace"] = step.namespace()
            events += [
                ("response.output_item.added", {"output_index": 0, "item": {
                    **item, "arguments": "", "status": "in_progress"}}),
                ("response.function_call_arguments.delta", {
                    "output_index": 0, "item_id": item["id"], "delta": item["arguments"]}),
                ("response.function_call_arguments.done", {
                    "output_index": 0, "item_id": item["id"], "arguments": item["arguments"]}),
            ]
        else:
            part = {"type": "output_text", "text": step.text, "annotations": []}
            item = {"type": "message", "id": f"msg_{call_id}", "role": "assistant",
                    "status": "completed", "content": [part]}
            where = {"output_index": 0, "item_id": item["id"], "content_index": 0}
            events += [
                ("response.output_item.added", {"output_index": 0, "item": {
                    **item, "status": "in_progress", "content": []}}),
                ("response.content_part.added", {**where, "part": {**part, "text": ""}}),
                ("response.output_text.delta", {**where, "delta": step.text}),
                ("response.output_text.done", {**where, "text": step.text}),
                ("response.content_part.done", {**where, "part": part}),
            ]
        events.append(("response.output_item.done", {"output_index": 0, "item": item}))
        response = {"id": response_id, "object": "response", "created_at": created,
                    "status": "completed", "model": model, "output": [item], "usage": usage}
        if not body.get("stream"):
            return JSON, json.dumps(response).encode()
        started = {**response, "status": "in_progress", "output": [], "usage": None}
        events = [("response.created", {"response": started}),
                  ("response.in_progress", {"response": started}),
                  *events,
                  ("response.completed", {"response": response})]
        return SSE, sse([(name, {"type": name, "sequence_number": number, **data})
                          for number, (name, data) in enumerate(events)])


class Chat(Api):
    name = "chat"
    paths = ("/v1/chat/completions", "/chat/completions")

    @staticmethod
    def instructions(body: Any) -> list[str]:
        messages = body.get("messages") or []
        if messages and messages[0].get("role") in ("system", "developer"):
            return _texts(messages[0].get("content"), ("text",))
        return []

    @staticmethod
    def trailing_call_ids(body: Any) -> list[str]:
        ids = []
        for message in reversed(body.get("messages") or []):
            if message.get("role") != "tool":
                break
            ids.append(str(message.get("tool_call_id")))
        return ids[::-1]

    @staticmethod
    def render(body: Any, step: Step, call_id: str) -> tuple[str, bytes]:
        model = str(body.get("model", "mock-model"))
        base = {"id": f"chatcmpl-{call_id}", "object": "chat.completion.chunk",
                "created": int(time.time()), "model": model}
        prompt = _estimate_tokens(body)
        usage = {"prompt_tokens": prompt, "completion_tokens": 5, "total_tokens": prompt + 5}
        if isinstance(step, ToolCall):
            call = {"id": call_id, "type": "function",
                    "function": {"name": step.name, "arguments": step.arguments_json()}}
            message: dict[str, Any] = {"role": "assistant", "content": None,
                                       "tool_calls": [call]}
            deltas: list[dict[str, Any]] = [
                {"role": "assistant", "content": None, "tool_calls": [
                    {"index": 0, **call, "function": {"name": step.name, "arguments": ""}}]},
                {"tool_calls": [{"index": 0, "function": {"arguments": step.arguments_json()}}]},
            ]
            finish = "tool_calls"
        else:
            message = {"role": "assistant", "content": step.text}
            deltas = [{"role": "assistant", "content": ""}, {"content": step.text}]
            finish = "stop"
        if not body.get("stream"):
            return JSON, json.dumps({**base, "object": "chat.completion", "usage": usage,
                                     "choices": [{"index": 0, "message": message,
                                                  "finish_reason": finish}]}).encode()
        chunks: list[Any] = [{**base, "choices": [{"index": 0, "delta": delta,
                                                   "finish_reason": None}]}
                             for delta in deltas]
        chunks.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
        chunks.append({**base, "choices": [], "usage": usage})
        return SSE, sse([(None, chunk) for chunk in chunks] + [(None, "[DONE]")])


class Gemini(Api):
    """`:generateContent` (one JSON document); `GeminiStream` is the same API streamed.

    Streaming is chosen by the path, not the body, hence two classes with one `name`.
    A tool call is a `functionCall` part with the mock's id; a text answering a request that
    asks for JSON is made JSON (`gemini_answer_text`), or Gemini CLI retries it 5 times."""

    name = "gemini"
    paths = ()
    method: ClassVar[str] = "generateContent"

    @classmethod
    def serves(cls, path: str) -> bool:
        match = re.fullmatch(r"/v1(?:beta|alpha)?/(?:models|tunedModels)/[^/:]+:(\w+)", path)
        return match is not None and match.group(1) == cls.method

    @staticmethod
    def instructions(body: Any) -> list[str]:
        system = body.get("systemInstruction")
        if isinstance(system, str):
            return [system]
        if isinstance(system, dict):
            return [str(part["text"]) for part in system.get("parts") or []
                    if isinstance(part, dict) and "text" in part]
        return []

    @staticmethod
    def trailing_call_ids(body: Any) -> list[str]:
        contents = body.get("contents") or []
        if not contents or not isinstance(contents[-1], dict) \
                or contents[-1].get("role") == "model":
            return []
        return [gemini_call_id(part["functionResponse"])
                for part in contents[-1].get("parts") or []
                if isinstance(part, dict) and isinstance(part.get("functionResponse"), dict)]

    @classmethod
    def _chunks(cls, body: Any, step: Step, call_id: str) -> list[dict[str, Any]]:
        """The response as the stream's chunks: the part, then the finish reason with usage."""
        if isinstance(step, ToolCall):
            part: dict[str, Any] = {"functionCall": {
                "id": call_id, "name": step.gemini_name(), "args": step.arguments}}
        else:
            part = {"text": gemini_answer_text(body, step.text)}
        prompt = _estimate_tokens(body)
        base = {"modelVersion": "mock-model", "responseId": f"resp_{call_id}"}
        return [
            {"candidates": [{"content": {"role": "model", "parts": [part]}, "index": 0}],
             **base},
            {"candidates": [{"content": {"role": "model", "parts": []},
                             "finishReason": "STOP", "index": 0}],
             "usageMetadata": {"promptTokenCount": prompt, "candidatesTokenCount": 5,
                               "totalTokenCount": prompt + 5},
             **base},
        ]

    @classmethod
    def render(cls, body: Any, step: Step, call_id: str) -> tuple[str, bytes]:
        first, last = cls._chunks(body, step, call_id)
        candidate = {**last["candidates"][0], "content": first["candidates"][0]["content"]}
        return JSON, json.dumps({**last, "candidates": [candidate]}).encode()


class GeminiStream(Gemini):
    """`:streamGenerateContent?alt=sse`: `data:` lines, no event names, no `[DONE]`."""

    method = "streamGenerateContent"

    @classmethod
    def render(cls, body: Any, step: Step, call_id: str) -> tuple[str, bytes]:
        return SSE, sse([(None, chunk) for chunk in cls._chunks(body, step, call_id)])


APIS: tuple[type[Api], ...] = (Anthropic, Responses, Chat, Gemini, GeminiStream)


def api_for(path: str) -> type[Api] | None:
    """The model API the mock serves at `path` (query string removed), or None."""
    for api in APIS:
        if api.serves(path):
            return api
    return None
