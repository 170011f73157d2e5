"""What a llama.cpp or a vLLM server says of the model's context window, as `MockModel`
routes (Ollama, which answers with endpoints of its own, is `FakeOllama`):

    with MockModel([Text("ok")], routes=llama_cpp(8192)) as server: ...

- llama.cpp's `llama-server`: `GET /props` with `default_generation_settings.n_ctx` (one
  slot's window) and `total_slots`; some versions put `n_ctx` at the top level instead.
- vLLM: `GET /v1/models` entries `owned_by: vllm` with `max_model_len`.
"""

from __future__ import annotations

from typing import Any


def llama_cpp(n_ctx: int, slots: int = 1, top_level: bool = False) -> dict[str, Any]:
    props: dict[str, Any] = {"total_slots": slots, "model_path": "/models/model.gguf",
                             "build_info": "b6000-mock"}
    if top_level:
        props["n_ctx"] = n_ctx
    else:
        props["default_generation_settings"] = {"n_ctx": n_ctx, "params": {"n_predict": -1}}
    return {"/props": props}


def vllm(model: str, max_model_len: int) -> dict[str, Any]:
    return {"/v1/models": {"object": "list", "data": [
        {"id": model, "object": "model", "created": 0, "owned_by": "vllm", "root": model,
         "parent": None, "max_model_len": max_model_len}]}}
