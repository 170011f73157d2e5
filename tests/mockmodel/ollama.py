"""A fake Ollama: the scripted `MockModel` plus the native endpoints that tell the window.

    with FakeOllama([Text("ok")], loaded=4096) as ollama:   # /api/ps reports 4,096
        ...

- `GET /api/version` → `{"version": …}` (how a client knows it is Ollama).
- `POST /api/show` → `model_info` with `<family>.context_length = trained` and
  `parameters` carrying `num_ctx N` when `num_ctx` is given (a Modelfile's setting).
- `POST /api/generate` with an empty prompt "loads" the model; afterwards `GET /api/ps`
  lists it with `context_length = loaded` (when given; older Ollamas report none).
- `pin=N` rewrites every prompt count the model APIs report (`prompt_tokens`,
  `input_tokens`) to N: a server that truncated the prompt to its window.

Everything else is `MockModel`'s (the model APIs, scripts, recording); `api_calls`
lists the native calls in order.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from tests.mockmodel.script import Step
from tests.mockmodel.server import MockModel

VERSION = "0.12.6"


class FakeOllama(MockModel):
    def __init__(self, *scripts: Sequence[Step], model: str = "qwen3:14b",
                 trained: int = 40960, num_ctx: int | None = None, loaded: int | None = None,
                 pin: int | None = None) -> None:
        super().__init__(*scripts)
        self.model, self.trained, self.num_ctx = model, trained, num_ctx
        self.loaded, self.pin = loaded, pin
        self.is_loaded = False
        self.api_calls: list[tuple[str, str, Any]] = []
        self._server.RequestHandlerClass = _handler(self, self._server.RequestHandlerClass)

    def native(self, path: str, body: Any) -> tuple[int, Any]:
        """The answer to one `/api/…` request."""
        self.api_calls.append(("GET" if body is None else "POST", path, body))
        if path == "/api/version":
            return 200, {"version": VERSION}
        if path == "/api/show":
            if not isinstance(body, dict) or body.get("model") != self.model:
                return 404, {"error": f"model '{body}' not found"}
            parameters = f"num_ctx                        {self.num_ctx}\n" \
                if self.num_ctx else ""
            return 200, {"parameters": parameters, "details": {"family": "qwen3"},
                         "model_info": {"general.architecture": "qwen3",
                                        "qwen3.context_length": self.trained}}
        if path == "/api/generate":
            self.is_loaded = True
            return 200, {"model": self.model, "response": "", "done": True,
                         "done_reason": "load"}
        if path == "/api/ps":
            entry: dict[str, Any] = {"name": self.model, "model": self.model}
            if self.loaded is not None:
                entry["context_length"] = self.loaded
            return 200, {"models": [entry] if self.is_loaded else []}
        return 404, {"error": "not found"}


def _handler(fake: FakeOllama, base: Any) -> Any:
    class Handler(base):  # type: ignore[misc,valid-type]
        def _handle(self) -> None:
            path = self.path.partition("?")[0]
            if not path.startswith("/api/"):
                super()._handle()
                return
            raw = self._read_body() if self.command == "POST" else b""
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                body = None
            status, answer = fake.native(path, body if self.command == "POST" else None)
            self._send(status, "application/json", json.dumps(answer).encode())

        def _send(self, status: int, content_type: str, payload: bytes) -> None:
            if fake.pin is not None:
                payload = re.sub(rb'"(prompt_tokens|input_tokens)":\s*\d+',
                                 lambda m: b'"%s": %d' % (m.group(1), fake.pin), payload)
            super()._send(status, content_type, payload)

        do_GET = do_POST = do_HEAD = do_PUT = do_DELETE = do_PATCH = _handle

    return Handler
