"""Truncated prompts in the endpoint's own counts, after the run.

Before the run the harness refuses a window smaller than the agent's first request
(`amux.launcher.window`, as `amux run --endpoint` does). A window it could not tell, or a
prompt that grew during a session, can still be cut: `pinned` looks at what the endpoint
reported (`usage.prompt_tokens` / `input_tokens`) for every model request. Counts at the
window, one count repeated for prompts of clearly different sizes, or counts far below the
characters sent are the signature of a truncated prompt.
"""

from __future__ import annotations

import math

from amux.launcher.window import Window


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
