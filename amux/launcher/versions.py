"""The version of an agent's CLI, as its adapter reads it from `--version`: asked once per
binary (path, size, mtime) and remembered in `<AMUX_HOME>/cache/agent-versions.json`, since a
Node CLI takes a few hundred ms to say it and every launch records it (the doctor shows
it too)."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path

from amux.adapters.base import Adapter
from amux.durable import write_file_atomic
from amux.launcher.probe import SystemProbe
from amux.launcher.supervise import RunAs

VERSION_TIMEOUT_SECONDS = 10.0


def cached_version(home: Path, adapter: Adapter, executable: str,
                   env: Mapping[str, str] | None = None,
                   run_as: RunAs | None = None, ask: bool = True) -> str | None:
    """The agent's version as its adapter reads it, remembered per binary. Asked with
    `env` (default ours), as `run_as` (an isolated run's target: the agent may read its
    config and cwd to answer, which are the target's), the way every short command of a
    launch runs (`SystemProbe.run`: its own session, killed with all it started at the
    timeout). Without `ask` (a dry run starts nothing), a version remembered before, else
    the one its npm package declares (`package_version`)."""
    if adapter.version_args is None:
        return None
    real = os.path.realpath(executable)
    try:
        st = os.stat(real)
    except OSError:
        return None
    key = f"{real}:{st.st_size}:{st.st_mtime_ns}"
    cache_path = home / "cache" / "agent-versions.json"
    try:
        cache = json.loads(cache_path.read_text())
    except (OSError, ValueError):
        cache = {}
    if isinstance(cache, dict) and isinstance(cache.get(key), str):
        return str(cache[key])
    if not ask:
        return package_version(real)
    probe = SystemProbe(os.environ if env is None else env, os.getcwd(), run_as=run_as)
    done = probe.run([executable, *adapter.version_args], timeout=VERSION_TIMEOUT_SECONDS,
                     env=adapter.probe_env)
    if done is None:
        return None
    version = adapter.version(*done)
    if not version:
        return None
    cache = {k: v for k, v in (cache.items() if isinstance(cache, dict) else ())
             if not k.startswith(f"{real}:")}
    cache[key] = version
    cache_path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    write_file_atomic(cache_path, json.dumps(cache, indent=1).encode() + b"\n")
    return version


PACKAGE_LEVELS = 4
"""How far above an agent's real executable its package's `package.json` may be
(`dist/bundle/cli.js`: two levels)."""


def package_version(real: str) -> str | None:
    """The `version` of the npm package whose code `real` (an executable, links resolved) is,
    read without starting it; None when there is none. What `--version` says may add to it
    (Claude's "(Claude Code)"): for a dry run's choice between an agent's routes
    (`channel_for`), never recorded."""
    from amux.launcher import readfile

    directory = os.path.dirname(real)
    for _ in range(PACKAGE_LEVELS):
        manifest = os.path.join(directory, "package.json")
        if os.path.isfile(manifest):
            try:  # a FIFO or a device there is refused, never waited on
                text = readfile.read_bytes(manifest, 1 << 20)
                found = None if text is None else json.loads(text)
            except (OSError, ValueError, RecursionError):
                return None
            version = found.get("version") if isinstance(found, dict) else None
            return version if isinstance(version, str) else None
        directory = os.path.dirname(directory)
    return None
