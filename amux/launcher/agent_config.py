"""Where Codex keeps its session rollouts, so the launcher can learn the id of the
thread a run created (read only, never written)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from amux.adapters import codex


def codex_home(env: Mapping[str, str]) -> Path:
    return Path(codex.codex_home(env))


def codex_rollouts(env: Mapping[str, str]) -> set[Path]:
    """The session rollout files Codex has written so far."""
    root = codex_home(env) / "sessions"
    return set(root.rglob("rollout-*.jsonl")) if root.is_dir() else set()


def codex_new_session(before: set[Path], env: Mapping[str, str]) -> str | None:
    """The id of the thread a run created: the newest rollout file not seen before."""
    new = sorted(codex_rollouts(env) - before, key=lambda path: path.stat().st_mtime)
    for path in reversed(new):
        try:
            with path.open(encoding="utf-8") as handle:
                first = json.loads(handle.readline())
        except (OSError, ValueError):
            continue
        payload = first.get("payload") if isinstance(first, dict) else None
        if isinstance(payload, dict) and isinstance(payload.get("id"), str):
            return str(payload["id"])
    return None

