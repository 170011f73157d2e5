"""Context windows: will the model read the whole first request the agent sends?

A model server that serves a model with a window smaller than the agent's first request
does not say so. Ollama's OpenAI- and Anthropic-compatible endpoints ignore a per-request
`num_ctx` and silently drop the start of a longer prompt, where the agent's instructions
and the memory protocol are (seed 004 §4.5.0: a 4,096-token window cut 63 % of an
11,000-token prompt). So `amux run --endpoint` and `amux eval live` ask the server what
window the model gets (`probe`) and compare it with the agent's first request (`Prompt`):

- **Ollama** (`GET /api/version` answers on the URL's host): the model is loaded as the
  agent's first request would load it (an empty `POST /api/generate`, no options), and the
  window is what `GET /api/ps` reports for it (`context_length`); else the Modelfile's
  `num_ctx` (`POST /api/show` `parameters`), which outranks the server's default; else,
  when `/api/ps` lists the model with no length (an older Ollama), the documented default
  of 4,096 tokens (assumed); never more than the model's trained length (`/api/show`
  `model_info` `*.context_length`). When the model is not loaded (it did not load in time,
  or the caller loads nothing: a dry run) and no Modelfile says, the window is unknown.
- **llama.cpp's server**: `GET /props` `default_generation_settings.n_ctx` (the window of
  one slot), or `n_ctx` at its top level (some versions).
- **Anything else**, vLLM included: a length in the model's entry of `GET …/models`
  (`max_model_len`, `context_length`, …); the Gemini API: the model's `inputTokenLimit`
  (`GET …/v1beta/models/NAME`).
- None of these: unknown, which the caller says.

Every question (`endpoints.Asker`) is bounded (`ASK_SECONDS` each, twice that for all of
them; the load has its own bound), goes to the endpoint's own host and never follows a
redirect. The endpoint's key goes only with the questions under its URL (`…/models`); a
user and password in the URL go to its host as `Authorization: Basic`.
"""

from __future__ import annotations

import math
import re
from urllib.parse import quote, urlsplit

from amux.adapters.base import Adapter, EndpointApi
from amux.launcher import endpoints
from amux.typing_light import NamedTuple

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

OLLAMA_DEFAULT_WINDOW = 4096
ASK_SECONDS = 2.5
"""How long one question may take (all of them: twice that)."""
LOAD_SECONDS = 30.0
"""How long `amux run` lets Ollama load the model before the window is unknown."""
HEADROOM_TOKENS = 8192
"""What a session adds to the first request (tool results, the answer), in the window a
refusal suggests."""
_WINDOW_KEYS = ("context_length", "context_window", "max_model_len", "max_context_length",
                "n_ctx", "max_input_tokens", "input_token_limit", "inputTokenLimit")


class Window(NamedTuple):
    """The window a server gives the model, and where that came from."""

    tokens: int | None
    source: str
    """Where `tokens` came from; when unknown, why."""
    server: str = "unknown"
    """`ollama VERSION`, `llama.cpp`, `vllm` or `unknown`."""
    trained: int | None = None
    """The model's own maximum (Ollama `model_info`)."""
    num_ctx: int | None = None
    """The Modelfile's `num_ctx` (Ollama)."""
    loaded: int | None = None
    """What Ollama's /api/ps reports for the loaded model."""
    slots: int | None = None
    """llama.cpp's `total_slots` (each has its share of `--ctx-size`)."""

    @property
    def ollama(self) -> bool:
        return self.server.startswith("ollama")


class Prompt(NamedTuple):
    """What the window must hold: the first request an agent sends."""

    agent: str
    tokens: int
    """The estimate at 4 characters a token."""
    measured: str
    """How it was measured, for the messages."""
    memory: bool = True
    """Whether it carries amux's memory protocol."""


def first_request(adapter: Adapter, memory: bool) -> Prompt | None:
    """The agent's first request as its adapter recorded it (measured at its defaults), with
    or without memory; None when the adapter knows none."""
    known = adapter.first_request
    if known is None:
        return None
    size = known.memory if memory else known.plain
    return Prompt(adapter.name, size.tokens,
                  f"{adapter.display_name} {known.version} at its defaults "
                  f"{'with' if memory else 'without'} amux memory, measured: {size.chars:,} "
                  "characters at 4 a token", memory)


# -- asking the server ----------------------------------------------------------------------


def _json_of(answer: endpoints.Answer | None) -> Any:
    """The JSON of a successful answer, else None."""
    return answer[1] if answer is not None and answer[0] < 300 else None


def probe(url: str, model: str, api: EndpointApi, key: str | None = None, *,
          load_seconds: float | None = LOAD_SECONDS, ask_seconds: float = ASK_SECONDS) -> Window:
    """The window the endpoint at `url` serves `model` with (`api`: what the endpoint
    speaks; `key`: its key). `load_seconds`: how long Ollama may take to load the model;
    None: load nothing (a dry run)."""
    asker = endpoints.Asker(url, api, key, ask_seconds)
    if api == "gemini":  # the Gemini API describes one model by its name
        found = _find_window(_json_of(asker.ask(
            f"{asker.base}/v1beta/models/{quote(model, safe='')}", keyed=True)))
        if found is not None:
            return Window(found[1], f"GET …/v1beta/models/{model} {found[0]}")
        return _unknown(asker)
    version = _json_of(asker.ask(f"{asker.root}/api/version"))
    if isinstance(version, dict) and isinstance(version.get("version"), str):
        return _ollama(asker, model, str(version["version"]), load_seconds)
    props = _json_of(asker.ask(f"{asker.root}/props"))
    if isinstance(props, dict):
        settings = props.get("default_generation_settings")
        for where, n_ctx in (("default_generation_settings.n_ctx",
                              settings.get("n_ctx") if isinstance(settings, dict) else None),
                             ("n_ctx", props.get("n_ctx"))):
            if _positive(n_ctx):
                slots = props.get("total_slots")
                return Window(n_ctx, f"llama.cpp GET /props {where}", server="llama.cpp",
                              slots=slots if _positive(slots) else None)
    listing = _json_of(asker.ask(f"{asker.base}/models", keyed=True))
    if not isinstance(listing, dict) and not urlsplit(asker.base).path.endswith("/v1"):
        listing = _json_of(asker.ask(f"{asker.base}/v1/models", keyed=True))
    entries = listing.get("data") if isinstance(listing, dict) else None
    for entry in entries if isinstance(entries, list) else []:
        if isinstance(entry, dict) and entry.get("id") == model:
            found = _find_window(entry)
            if found is not None:
                return Window(found[1], f"GET …/models {found[0]}",
                              server="vllm" if entry.get("owned_by") == "vllm" else "unknown")
    return _unknown(asker)


def _unknown(asker: endpoints.Asker) -> Window:
    if asker.answered:
        return Window(None, "the endpoint reports no context window")
    return Window(None, f"nothing answered at {asker.root}")


def _positive(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _find_window(entry: Any) -> tuple[str, int] | None:
    """The first window length in a model's description (nested too), with its key."""
    if not isinstance(entry, dict):
        return None
    for key, value in entry.items():
        if key in _WINDOW_KEYS and _positive(value):
            return key, value
        nested = _find_window(value)
        if nested is not None:
            return f"{key}.{nested[0]}", nested[1]
    return None


def _ollama(asker: endpoints.Asker, model: str, version: str, load_seconds: float | None) -> Window:
    server = f"ollama {version}"
    shown = asker.ask(f"{asker.root}/api/show", {"model": model})
    if shown is not None and shown[0] == 404:
        return Window(None, f"Ollama has no model {model} (`ollama pull {model}`)", server)
    described = _json_of(shown)
    trained = num_ctx = None
    if isinstance(described, dict):
        info = described.get("model_info")
        lengths = [value for key, value in info.items() if key.endswith(".context_length")
                   and _positive(value)] if isinstance(info, dict) else []
        trained = lengths[0] if lengths else None
        matched = re.search(r"^\s*num_ctx\s+(\d+)", str(described.get("parameters") or ""),
                            re.MULTILINE)
        num_ctx = int(matched.group(1)) if matched else None
    failed = None
    if load_seconds is not None:  # as the agent's first request will: no options
        loading = asker.ask(f"{asker.root}/api/generate", {"model": model, "prompt": ""},
                            timeout=load_seconds)
        if loading is None:
            failed = f"{model} did not load within {load_seconds:g} s"
        elif loading[0] >= 300:
            said = loading[1].get("error") if isinstance(loading[1], dict) else None
            failed = f"Ollama could not load {model}: {said or f'HTTP {loading[0]}'}"
    running = _json_of(asker.ask(f"{asker.root}/api/ps"))
    listed, loaded = False, None
    for entry in running.get("models", []) if isinstance(running, dict) else []:
        names = {entry.get("name"), entry.get("model")} if isinstance(entry, dict) else set()
        if model in names or f"{model}:latest" in names:
            listed = True
            length = entry.get("context_length")
            loaded = length if _positive(length) else None
    found = Window(None, "", server, trained, num_ctx, loaded)
    if loaded is not None:
        found = found._replace(tokens=loaded, source="Ollama /api/ps context_length (loaded)")
    elif num_ctx is not None:
        found = found._replace(tokens=num_ctx, source="Ollama Modelfile num_ctx")
    elif listed:
        found = found._replace(tokens=OLLAMA_DEFAULT_WINDOW, source=(
            "Ollama's default, assumed: this Ollama reports neither a loaded context_length "
            "nor a num_ctx"))
    else:
        return found._replace(source=failed or (f"Ollama has not loaded {model} yet, and a "
                                                "dry run loads no model"))
    if trained is not None and found.tokens is not None and found.tokens > trained:
        found = found._replace(tokens=trained, source=found.source + (
            f", capped at the model's trained length {trained}"))
    return found


# -- what the window means ------------------------------------------------------------------


def suggested_window(prompt_tokens: int) -> int:
    """A window that holds the prompt and a session's growth: a multiple of 8,192."""
    return max(16384, math.ceil((prompt_tokens + HEADROOM_TOKENS) / 8192) * 8192)


def _server_name(window: Window) -> str:
    if window.ollama:
        return "Ollama " + window.server.partition(" ")[2]
    return {"llama.cpp": "llama.cpp's server", "vllm": "vLLM"}.get(window.server,
                                                                    "The endpoint")


def _ollama_fix(model: str, window: Window, needed: int, lost: str) -> str:
    made = (f"create a model with num_ctx {needed}: printf 'FROM {model}\\nPARAMETER num_ctx "
            f"{needed}\\n' > Modelfile && ollama create {model}-ctx{needed} -f Modelfile, "
            f"and use --model {model}-ctx{needed}")
    said = ("Ollama's OpenAI- and Anthropic-compatible endpoints ignore a per-request num_ctx "
            f"and silently drop the start of a longer prompt: {lost} would never reach the "
            f"model. Fix, a window of {needed:,} tokens: ")
    if window.num_ctx is not None:
        return said + (f"{model}'s Modelfile sets num_ctx {window.num_ctx}, which outranks "
                       "the server's OLLAMA_CONTEXT_LENGTH, so " + made)
    return said + (f"restart Ollama with OLLAMA_CONTEXT_LENGTH={needed} ollama serve, or "
                   + made)


def _llama_cpp_fix(model: str, window: Window, needed: int, lost: str) -> str:
    slots = window.slots or 1
    share = (f" (each of its {slots} slots gets a share: --ctx-size {needed * slots}, or "
             f"--parallel 1 --ctx-size {needed})" if slots > 1 else "")
    return (f"It would refuse the prompt or cut it, and {lost} would not reach the model. "
            f"Fix: restart llama-server with --ctx-size {needed}{share}")


def _vllm_fix(model: str, window: Window, needed: int, lost: str) -> str:
    return (f"It refuses a longer prompt, so {lost} would not reach the model. Fix: restart "
            f"vLLM with --max-model-len {needed} if {model} holds that many tokens; else "
            "choose a model with a longer context")


def _other_fix(model: str, window: Window, needed: int, lost: str) -> str:
    return (f"The endpoint would cut or refuse the prompt, so {lost} would not reach the "
            f"model: serve the model with a larger context window ({needed:,} tokens)")


_FIXES: dict[str, Callable[[str, Window, int, str], str]] = {  # by the server's kind
    "ollama": _ollama_fix, "llama.cpp": _llama_cpp_fix, "vllm": _vllm_fix}


def refusal(model: str, prompt: Prompt, window: Window) -> str | None:
    """Why the agent must not start against this window (one line naming the fix), or
    None."""
    if window.tokens is None or prompt.tokens <= window.tokens:
        return None
    head = (f"{_server_name(window)} serves {model} with a context window of "
            f"{window.tokens:,} tokens ({window.source}), smaller than the first request "
            f"{prompt.agent} sends, about {prompt.tokens:,} tokens ({prompt.measured}). ")
    if window.trained is not None and window.trained < prompt.tokens:
        return head + (f"{model} holds at most {window.trained:,} tokens (its trained "
                       "context length): no setting makes the prompt fit; choose a model "
                       "with a longer context")
    needed = suggested_window(prompt.tokens)
    if window.trained is not None:
        needed = min(needed, window.trained)
    lost = ("the agent's instructions and the memory protocol" if prompt.memory
            else "the agent's instructions")
    fix = _FIXES.get(window.server.partition(" ")[0], _other_fix)
    return head + fix(model, window, needed, lost)


def tight(prompt: Prompt, window: Window) -> str | None:
    """A warning when the prompt fits but leaves little room (the estimate is rough)."""
    if window.tokens is None or prompt.tokens > window.tokens:
        return None
    if prompt.tokens * 1.25 > window.tokens:
        return (f"the first request {prompt.agent} sends (about {prompt.tokens:,} tokens) "
                f"nearly fills the {window.tokens:,}-token window: tool results may push "
                "it over")
    return None


def unknown(model: str, prompt: Prompt, window: Window) -> str | None:
    """The one line saying the window could not be told, or None when it was."""
    if window.tokens is not None:
        return None
    lost = ("the agent's instructions and the memory protocol" if prompt.memory
            else "the agent's instructions")
    return (f"the context window {model} gets could not be told ({window.source}); if it "
            f"holds fewer than about {prompt.tokens:,} tokens (the first request "
            f"{prompt.agent} sends), the model will not see the start of the prompt: {lost}")


class Check(NamedTuple):
    """A launch's endpoint window against its agent's first request."""

    model: str
    prompt: Prompt
    window: Window

    def refused(self) -> str | None:
        return refusal(self.model, self.prompt, self.window)

    def said(self) -> str | None:
        """What the launch says of it: the window could not be told, or is tight."""
        return unknown(self.model, self.prompt, self.window) or tight(self.prompt, self.window)

    def shown(self) -> dict[str, Any]:
        """As `--dry-run` shows it."""
        return {**self.window._asdict(), "first_request_tokens": self.prompt.tokens,
                "first_request": self.prompt.measured, "said": self.said()}
