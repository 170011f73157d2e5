"""What the launcher reads from an agent's own configuration (read only, never written).

Adapters are pure, so whatever they need from the user's files is read here:
Codex's effective `developer_instructions` (config.toml, or the selected
profile's file), and where Codex keeps its session rollouts, so the launcher can
learn the id of the thread a run created.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path


def codex_home(env: Mapping[str, str]) -> Path:
    explicit = env.get("CODEX_HOME")
    return Path(explicit) if explicit else Path(env.get("HOME", "~")).expanduser() / ".codex"


def _profile(args: list[str]) -> str | None:
    for index, arg in enumerate(args):
        if arg in ("--profile", "-p") and index + 1 < len(args):
            return args[index + 1]
        if arg.startswith("--profile="):
            return arg.partition("=")[2]
    return None


def _instructions_in(path: Path) -> str | None:
    import tomlkit  # only for Codex launches

    try:
        config = tomlkit.parse(path.read_text(encoding="utf-8")).unwrap()
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise ValueError(f"cannot read Codex's {path}: {exc}") from None
    value = config.get("developer_instructions")
    return value if isinstance(value, str) else None


def codex_user_instructions(args: list[str], env: Mapping[str, str]) -> str | None:
    """The `developer_instructions` Codex would use without us.

    `--profile NAME` layers `$CODEX_HOME/NAME.config.toml` over config.toml (Codex
    0.171's profiles), so the profile's value wins. A `-c developer_instructions=…`
    in `args` wins over both; the adapter handles that one, since it must also
    take it out of the arguments. Trusted projects' `.codex/config.toml` layers
    are not read (docs/launcher.md).
    """
    home = codex_home(env)
    profile = _profile(args)
    if profile:
        chosen = _instructions_in(home / f"{profile}.config.toml")
        if chosen is not None:
            return chosen
    return _instructions_in(home / "config.toml")


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

