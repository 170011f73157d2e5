"""A scripted mock model server on loopback for the real agent CLIs (Claude Code, Codex, Pi,
Gemini CLI).

    with MockModel([mcp("memory_upsert", {...}), Text("saved")]) as model:
        run_the_agent(base_url=model.base_url)          # http://127.0.0.1:PORT/v1
        assert model.main()[0].instructions.endswith("TEXT")
        assert "revision" in model.tool_results("memory_upsert")[0].text

Matching rule (deterministic, by the tool-call ids the mock hands out):

1. A request is a *side* request when `is_side(request)` says so: by default when it carries
   the header `x-openai-subagent` (Codex sub-agents such as `memory_consolidation`) or when it
   is an Anthropic or Gemini request without `tools` (Claude's side requests, e.g. titles or
   quota probes; Gemini CLI's model router, which asks `:generateContent` for a JSON
   complexity score; a run with no tools at all needs its own `is_side`). Side requests get
   `Text(SIDE_ANSWER)`, never consume a step, and are recorded with `side=True`.
2. A main request whose trailing tool results (the results after the model's last turn) answer
   a call this mock issued *continues* that call's conversation: it gets the step after the
   one that issued the call. Tool call ids are `toolu_mock_C_S` (Anthropic) or
   `call_mock_C_S` (OpenAI, Gemini), C the conversation and S the step.
3. Any other main request (a new user prompt, and so also a resumed session's next prompt)
   *starts* a new conversation with the next script of the queue; the last script stays in the
   queue and is reused, so one script serves every conversation. `push()` appends a script.
   With no script at all every conversation gets `Text(SIDE_ANSWER)`.
4. A continuation after the script's last step gets `Text(EXHAUSTED)` and `exhausted=True`.

A step's `delay` holds its answer back (the request is recorded at once): Codex starts its
memory consolidation concurrently with the first turn and exits before sending it when the
turn ends at once.

Other endpoints: `POST …/count_tokens` → `{"input_tokens": N}`, `POST …:countTokens`
(Gemini) → `{"totalTokens": N}`, a `GET` of a path in `routes` → its JSON (what a llama.cpp
or vLLM server says of its window: `tests/mockmodel/servers.py`), `GET /v1/models` → one
model, `HEAD`/`GET` anything else → 200 `{}`; other `POST`s → 404 with an Anthropic-style
error body.
Every request, answered or not, is recorded (`requests`), headers in lower case.
"""

from __future__ import annotations

import gzip
import json
import threading
import time
import zlib
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from amux.eval.loopback import LoopbackServer, QuietHandler
from amux.eval.model_apis import JSON, ToolResult, lists_tools
from tests.mockmodel.apis import Anthropic, Api, Gemini, api_for
from tests.mockmodel.script import EXHAUSTED, SIDE_ANSWER, Script, Step, Text, ToolCall


@dataclass
class Recorded:
    """One request the mock received, and what answered it."""

    index: int
    method: str
    path: str
    query: str
    headers: dict[str, str]
    raw: bytes
    body: Any
    api: str | None = None
    side: bool = False
    conversation: int | None = None
    step: int | None = None
    reply: Step | None = None
    exhausted: bool = False
    status: int = 200
    at: float = field(default_factory=time.monotonic)
    api_class: type[Api] | None = field(default=None, repr=False)

    @property
    def subagent(self) -> str | None:
        """The `x-openai-subagent` header (Codex sub-agents such as `memory_consolidation`)."""
        return self.headers.get("x-openai-subagent")

    @property
    def instruction_parts(self) -> list[str]:
        """Claude: `system` block texts; Codex: developer message texts of `input`;
        Pi: the text of `messages[0]` when it is the system message; Gemini: the text parts
        of `systemInstruction`."""
        if self.api_class is None or not isinstance(self.body, dict):
            return []
        return self.api_class.instructions(self.body)

    @property
    def instructions(self) -> str:
        """`instruction_parts` joined with a blank line."""
        return "\n\n".join(self.instruction_parts)

    @property
    def tool_results(self) -> list[ToolResult]:
        """Every tool result the request carries (the whole history, oldest first)."""
        if self.api_class is None or not isinstance(self.body, dict):
            return []
        return self.api_class.tool_results(self.body)

    @property
    def tools(self) -> list[Any]:
        """The request's `tools` list as sent (Gemini: `[{"functionDeclarations": […]}]`;
        `tool_names` flattens every API's list to names)."""
        tools = self.body.get("tools") if isinstance(self.body, dict) else None
        return tools if isinstance(tools, list) else []


    @property
    def tool_names(self) -> list[str]:
        """The names of the tools offered, in order (Gemini: every `functionDeclarations`
        entry; Codex: a namespace's name, not its tools'; Chat: `function.name`)."""
        names = []
        for tool in self.tools:
            if not isinstance(tool, dict):
                continue
            if isinstance(tool.get("functionDeclarations"), list):
                names += [str(d.get("name")) for d in tool["functionDeclarations"]
                          if isinstance(d, dict)]
            elif isinstance(tool.get("function"), dict):
                names.append(str(tool["function"].get("name")))
            elif "name" in tool:
                names.append(str(tool["name"]))
        return names


@dataclass(frozen=True)
class CallResult:
    """A tool call the mock issued and the result the agent sent back for it."""

    call: ToolCall
    call_id: str
    text: str
    is_error: bool
    request: int


def default_is_side(request: Recorded) -> bool:
    """Codex sub-agents (`x-openai-subagent`), Anthropic and Gemini requests without tools."""
    if request.subagent is not None:
        return True
    api = request.api_class
    return api is not None and issubclass(api, (Anthropic, Gemini)) \
        and not lists_tools(request.body)


class MockModel(LoopbackServer):
    """The server; a context manager. `scripts` is the queue of conversations (see module doc)."""

    def __init__(self, *scripts: Sequence[Step],
                 is_side: Callable[[Recorded], bool] = default_is_side, port: int = 0,
                 routes: Mapping[str, Any] | None = None) -> None:
        self.is_side = is_side
        self.routes = dict(routes or {})
        self._lock = threading.Condition()
        self._queue: deque[Script] = deque(list(script) for script in scripts)
        self._conversations: list[Script] = []
        self._issued: dict[str, tuple[int, int]] = {}
        self._requests: list[Recorded] = []
        super().__init__(_handler_for(self), port)

    @property
    def base_url(self) -> str:
        """`http://127.0.0.1:PORT/v1` (Codex's and Pi's provider base URL); `url` is
        Claude's ANTHROPIC_BASE_URL and Gemini CLI's GOOGLE_GEMINI_BASE_URL."""
        return f"{self.url}/v1"

    # -- scripts and records ----------------------------------------------------------------

    def push(self, *steps: Step) -> None:
        """Append a script for a later conversation."""
        with self._lock:
            self._queue.append(list(steps))

    @property
    def requests(self) -> list[Recorded]:
        """Every request so far, in arrival order."""
        with self._lock:
            return list(self._requests)

    def main(self) -> list[Recorded]:
        """Requests of the main conversations (side requests and other endpoints left out)."""
        return [r for r in self.requests if r.api is not None and not r.side]

    def side(self) -> list[Recorded]:
        """Side requests to a model endpoint (titles, quota probes, sub-agents)."""
        return [r for r in self.requests if r.api is not None and r.side]

    def conversation(self, number: int) -> list[Recorded]:
        return [r for r in self.main() if r.conversation == number]

    def tool_results(self, name: str | None = None) -> list[CallResult]:
        """Results the agents sent back for the mock's tool calls (each call once, in order),
        optionally only for the tool `name` (its logical name, e.g. `memory_upsert`)."""
        with self._lock:
            requests = list(self._requests)
            conversations = [list(script) for script in self._conversations]
            issued = dict(self._issued)
        seen: dict[str, CallResult] = {}
        for request in requests:
            for result in request.tool_results:
                where = issued.get(result.call_id)
                if where is None or result.call_id in seen:
                    continue
                call = conversations[where[0]][where[1]]
                assert isinstance(call, ToolCall)
                seen[result.call_id] = CallResult(call, result.call_id, result.text,
                                                  result.is_error, request.index)
        return [r for r in seen.values() if name is None or r.call.name == name]

    def wait_for(self, predicate: Callable[[Recorded], bool],
                 timeout: float) -> Recorded | None:
        """The first request (already received or arriving within `timeout` s) that matches."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while True:
                for request in self._requests:
                    if predicate(request):
                        return request
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self._lock.wait(left)

    # -- answering --------------------------------------------------------------------------

    def _record(self, request: Recorded) -> None:
        with self._lock:
            request.index = len(self._requests)
            self._requests.append(request)
            self._lock.notify_all()

    def _answer(self, request: Recorded) -> tuple[str, bytes]:
        """Classify a model request, pick its step, render it (under the lock: deterministic)."""
        api = request.api_class
        assert api is not None
        with self._lock:
            request.side = self.is_side(request)
            if request.side:
                step: Step = Text(SIDE_ANSWER)
                call_id = f"side_{len(self._requests)}"
            else:
                step, call_id = self._main_step(request, api)
        return api.render(request.body, step, call_id)

    def _main_step(self, request: Recorded, api: type[Api]) -> tuple[Step, str]:
        known = [self._issued[i] for i in api.trailing_call_ids(request.body)
                 if i in self._issued]
        if known:
            conversation, previous = max(known)
            number = previous + 1
        else:
            conversation, number = len(self._conversations), 0
            script: Script = (self._queue.popleft() if len(self._queue) > 1
                              else list(self._queue[0]) if self._queue else [Text(SIDE_ANSWER)])
            self._conversations.append(script)
        script = self._conversations[conversation]
        request.conversation, request.step = conversation, number
        if number < len(script):
            step = script[number]
        else:
            step, request.exhausted = Text(EXHAUSTED), True
        prefix = "toolu_mock" if api is Anthropic else "call_mock"
        call_id = f"{prefix}_{conversation}_{number}"
        if isinstance(step, ToolCall):
            self._issued[call_id] = (conversation, number)
        request.reply = step
        return step, call_id


def _decode(raw: bytes, encoding: str) -> bytes:
    if encoding == "gzip":
        return gzip.decompress(raw)
    if encoding == "deflate":
        return zlib.decompress(raw)
    if encoding == "zstd":
        import zstandard  # type: ignore[import-not-found]  # only if a client compresses

        return bytes(zstandard.ZstdDecompressor().decompressobj().decompress(raw))
    return raw


def _handler_for(model: MockModel) -> type[BaseHTTPRequestHandler]:
    class Handler(QuietHandler):
        def _send(self, status: int, content_type: str, payload: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(payload)))
            self.send_header("request-id", "req_mock")
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(payload)
            self.wfile.flush()

        def _handle(self) -> None:
            path, _, query = self.path.partition("?")
            headers = {key.lower(): value for key, value in self.headers.items()}
            raw = self._read_body() if self.command not in ("GET", "HEAD") else b""
            try:
                body: Any = json.loads(_decode(raw, headers.get("content-encoding", "")))
            except (ValueError, OSError, ImportError):
                body = None
            request = Recorded(0, self.command, path, query, headers, raw, body)
            api = api_for(path)
            if self.command == "POST" and api is not None and isinstance(body, dict):
                request.api, request.api_class = api.name, api
                content_type, payload = model._answer(request)
                status = 200
            elif path.endswith("/count_tokens"):
                status, content_type = 200, JSON
                payload = json.dumps({"input_tokens": max(1, len(raw) // 4)}).encode()
            elif path.endswith(":countTokens"):
                status, content_type = 200, JSON
                payload = json.dumps({"totalTokens": max(1, len(raw) // 4)}).encode()
            elif path in model.routes and self.command in ("GET", "HEAD"):
                status, content_type = 200, JSON
                payload = json.dumps(model.routes[path]).encode()
            elif path.rstrip("/").endswith("/models") and self.command in ("GET", "HEAD"):
                status, content_type = 200, JSON
                payload = json.dumps({"object": "list", "data": [
                    {"id": "mock-model", "object": "model", "type": "model",
                     "display_name": "Mock", "created": 0, "owned_by": "mock"}]}).encode()
            elif self.command in ("GET", "HEAD"):
                status, content_type, payload = 200, JSON, b"{}"
            else:
                status, content_type = 404, JSON
                payload = json.dumps({"type": "error", "error": {
                    "type": "not_found_error", "message": f"mock: no {path}"}}).encode()
            request.status = status
            model._record(request)
            if request.reply is not None and request.reply.delay:
                time.sleep(request.reply.delay)
            self._send(status, content_type, payload)

        do_GET = do_POST = do_HEAD = do_PUT = do_DELETE = do_PATCH = _handle

    return Handler


def first(requests: Iterable[Recorded], predicate: Callable[[Recorded], bool]) -> Recorded:
    """The first matching request (AssertionError naming what was seen otherwise)."""
    seen = list(requests)
    for request in seen:
        if predicate(request):
            return request
    raise AssertionError(f"no matching request among {[(r.method, r.path) for r in seen]}")
