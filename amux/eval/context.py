"""Context windows: does the endpoint read the whole prompt the agent sends?

Before the run the harness knows the agent's first request (captured with no model,
`Size`) and asks the endpoint how large a window it serves the model with:

- **Ollama** (`GET /api/version` answers on the base URL's host) ignores a per-request
  `num_ctx` on its OpenAI- and Anthropic-compatible endpoints and silently drops the
  beginning of a longer prompt: the agent's instructions and the memory protocol. The
  window is what `/api/ps` reports for the model once loaded (`context_length`; the
  harness loads it with an empty `/api/generate`, as the first request would), else the
  Modelfile's `num_ctx` (`/api/show` parameters), else Ollama's documented default
  (4,096 tokens, assumed); never more than the model's trained length (`/api/show`
  model_info `*.context_length`). A window smaller than the prompt is a refusal naming
  the fix.
- Elsewhere, a context length in the endpoint's `GET …/models` entry for the model
  (`context_length`, `context_window`, `max_model_len`, …) is used the same way; for
  the Gemini API, the model's `inputTokenLimit` (`GET …/v1beta/models/NAME`). None found
  means the window is unknown and only the run's counts can tell.

After the run, `pinned` looks at what the endpoint reported (`usage.prompt_tokens` /
`input_tokens`) for every model request: counts at the window, one count repeated for
prompts of clearly different sizes, or counts far below the characters sent are the
signature of a truncated prompt.
"""

from __future__ import annotations

import json
import math
import re
import urllib.error
import urllib.request
from dataclasses import asdict, dataclass
from typing import Any
from urllib.parse import urlsplit

from amux.adapters.base import ModelApi
from amux.eval.model_apis import Size
from amux.launcher import endpoints

OLLAMA_DEFAULT_WINDOW = 4096
PROBE_TIMEOUT = 10.0
LOAD_TIMEOUT = 600.0
HEADROOM_TOKENS = 8192
"""What a session adds to the first request (tool results, the answer) in the fix we
suggest."""
_WINDOW_KEYS = ("context_length", "context_window", "max_model_len", "max_context_length",
                "n_ctx", "max_input_tokens", "input_token_limit", "inputTokenLimit")


@dataclass
class Window:
    tokens: int | None
    source: str
    server: str = "unknown"
    trained: int | None = None
    """The model's own maximum (Ollama `model_info`)."""
    num_ctx: int | None = None
    """The Modelfile's `num_ctx` (Ollama)."""
    loaded: int | None = None
    """What Ollama's /api/ps reports for the loaded model."""

    @property
    def ollama(self) -> bool:
        return self.server.startswith("ollama")


def _get_json(url: str, body: dict[str, Any] | None = None, timeout: float = PROBE_TIMEOUT,
              headers: dict[str, str] | None = None) -> Any:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method="POST" if data else "GET",
                                     headers={"Content-Type": "application/json",
                                              **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return json.loads(response.read())
    except (urllib.error.URLError, OSError, ValueError):
        return None


def unreachable(base_url: str) -> str | None:
    """Why nothing answers at the endpoint's host (the launcher's check, with the
    harness's patience), or None."""
    return endpoints.unreachable(base_url, PROBE_TIMEOUT)


def probe(base_url: str, model: str, api_key: str | None = None,
          load_timeout: float = LOAD_TIMEOUT, api: ModelApi | None = None) -> Window:
    """The context window the endpoint serves `model` with, and where that came from
    (`api`: the model API the agent speaks; the Gemini API describes one model by its name)."""
    root = endpoints.root(base_url)
    version = _get_json(f"{root}/api/version")
    if isinstance(version, dict) and isinstance(version.get("version"), str):
        return _ollama(root, model, str(version["version"]), load_timeout)
    if api == "gemini":
        entry = _get_json(f"{base_url.rstrip('/')}/v1beta/models/{model}",
                          headers={"x-goog-api-key": api_key} if api_key else {})
        found = _find_window(entry) if isinstance(entry, dict) else None
        if found is not None:
            return Window(found[1], f"GET …/v1beta/models/{model} {found[0]}")
    auth = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    listing = _get_json(base_url.rstrip("/") + "/models", headers=auth)
    if listing is None and not urlsplit(base_url).path.rstrip("/").endswith("/v1"):
        listing = _get_json(base_url.rstrip("/") + "/v1/models", headers=auth)
    entries = listing.get("data") if isinstance(listing, dict) else None
    for entry in entries if isinstance(entries, list) else []:
        if not isinstance(entry, dict) or entry.get("id") != model:
            continue
        found = _find_window(entry)
        if found is not None:
            return Window(found[1], f"GET …/models {found[0]}")
    return Window(None, "unknown: the endpoint reports no context window")


def _find_window(entry: dict[str, Any]) -> tuple[str, int] | None:
    for key, value in entry.items():
        if key in _WINDOW_KEYS and isinstance(value, int) and value > 0:
            return key, value
        if isinstance(value, dict):
            nested = _find_window(value)
            if nested is not None:
                return f"{key}.{nested[0]}", nested[1]
    return None


def _ollama(root: str, model: str, version: str, load_timeout: float) -> Window:
    window = Window(None, "", server=f"ollama {version}")
    shown = _get_json(f"{root}/api/show", {"model": model})
    if isinstance(shown, dict):
        info = shown.get("model_info")
        if isinstance(info, dict):
            trained = [v for k, v in info.items()
                       if k.endswith(".context_length") and isinstance(v, int)]
            window.trained = trained[0] if trained else None
        matched = re.search(r"^\s*num_ctx\s+(\d+)", str(shown.get("parameters") or ""),
                            re.MULTILINE)
        window.num_ctx = int(matched.group(1)) if matched else None
    # Load the model the way the agent's first request will (no options), then ask.
    _get_json(f"{root}/api/generate", {"model": model, "prompt": ""}, timeout=load_timeout)
    running = _get_json(f"{root}/api/ps")
    for entry in running.get("models", []) if isinstance(running, dict) else []:
        names = {entry.get("name"), entry.get("model")} if isinstance(entry, dict) else set()
        if model in names or f"{model}:latest" in names:
            length = entry.get("context_length")
            window.loaded = length if isinstance(length, int) and length > 0 else None
    if window.loaded is not None:
        window.tokens, window.source = window.loaded, "Ollama /api/ps context_length (loaded)"
    elif window.num_ctx is not None:
        window.tokens, window.source = window.num_ctx, "Ollama Modelfile num_ctx"
    else:
        window.tokens = OLLAMA_DEFAULT_WINDOW
        window.source = ("Ollama's default, assumed: this Ollama reports neither a loaded "
                         "context_length nor a num_ctx")
    if window.trained is not None and window.tokens > window.trained:
        window.tokens = window.trained
        window.source += f", capped at the model's trained length {window.trained}"
    return window


def suggested_window(prompt_tokens: int) -> int:
    """A window that holds the prompt and a session's growth: a multiple of 8,192."""
    return max(16384, math.ceil((prompt_tokens + HEADROOM_TOKENS) / 8192) * 8192)


def refusal(agent: str, model: str, size: Size, window: Window) -> str | None:
    """Why the run must not start (the message names the fix), or None."""
    if window.tokens is None or size.estimated_tokens <= window.tokens:
        return None
    prompt = (f"the first request {agent} sends is about {size.estimated_tokens:,} tokens "
              f"({size.content_chars:,} characters of instructions, messages and "
              f"{size.tools} tool definitions, at 4 characters a token)")
    head = (f"amux eval: refusing to run: {prompt}, but the endpoint serves {model} with a "
            f"{window.tokens:,}-token context window ({window.source}). ")
    if not window.ollama:
        return head + ("The endpoint would cut the prompt, so the model would not see the "
                       "agent's instructions or the memory protocol: serve the model with a "
                       "larger context window and run again.")
    needed = suggested_window(size.estimated_tokens)
    if window.trained is not None and window.trained < size.estimated_tokens:
        return head + (f"{model} holds at most {window.trained:,} tokens (its trained "
                       "context length): no setting makes the prompt fit; choose a model "
                       "with a longer context.")
    if window.trained is not None:
        needed = min(needed, window.trained)
    return head + (
        "Ollama's OpenAI- and Anthropic-compatible endpoints ignore a per-request num_ctx "
        "and silently drop the beginning of a longer prompt: the agent's instructions and "
        "the memory protocol would never reach the model.\n"
        "Fix, either:\n"
        f"  - restart Ollama with a larger default window:\n"
        f"      OLLAMA_CONTEXT_LENGTH={needed} ollama serve\n"
        f"  - or create a model with the window in its Modelfile:\n"
        f"      printf 'FROM {model}\\nPARAMETER num_ctx {needed}\\n' > Modelfile\n"
        f"      ollama create {model}-ctx{needed} -f Modelfile\n"
        f"    and run the evaluation with --model {model}-ctx{needed}")


def tight(size: Size, window: Window) -> str | None:
    """A warning when the prompt fits but leaves little room (the estimate is rough)."""
    if window.tokens is None or size.estimated_tokens > window.tokens:
        return None
    if size.estimated_tokens * 1.25 > window.tokens:
        return (f"the prompt (about {size.estimated_tokens:,} tokens) nearly fills the "
                f"{window.tokens:,}-token window: tool results may push it over")
    return None


def pinned(counts: list[tuple[int, int | None]], window: Window) -> str | None:
    """A truncation sign in the endpoint's prompt counts, given (characters sent, tokens
    counted) for each model request; None when there is none."""
    seen = [(chars, tokens) for chars, tokens in counts if tokens]
    if not seen:
        return None
    if window.tokens is not None:
        at_window = [tokens for _, tokens in seen if tokens >= window.tokens * 0.98]
        if at_window:
            return (f"the endpoint counted {at_window[0]:,} prompt tokens, pinned at the "
                    f"{window.tokens:,}-token window ({len(at_window)} of {len(seen)} "
                    "requests): the prompt was truncated")
    by_count: dict[int, list[int]] = {}
    for chars, tokens in seen:
        by_count.setdefault(tokens, []).append(chars)
    for tokens, sizes in by_count.items():
        if tokens >= 1024 and len(sizes) >= 2 and max(sizes) >= min(sizes) * 1.1:
            return (f"the endpoint counted exactly {tokens:,} prompt tokens for "
                    f"{len(sizes)} requests of {min(sizes):,} to {max(sizes):,} characters: "
                    "a count pinned at the window, the prompt was truncated")
    short = [(chars, tokens) for chars, tokens in seen
             if tokens * 2 < math.ceil(chars / 4) and chars > 8192]
    if short:
        chars, tokens = short[0]
        return (f"the endpoint counted {tokens:,} prompt tokens for a request of {chars:,} "
                "characters (under half the estimate): the prompt was probably truncated")
    return None


def window_json(window: Window) -> dict[str, Any]:
    return {**asdict(window), "ollama": window.ollama}
