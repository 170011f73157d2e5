"""An agent's first model request through `amux run`, measured: the real agent CLI at its
defaults, pointed at the mock model with `--endpoint`, one headless turn (the adapter's
`headless` plan, in homes of the test's own: `headless_turn`), with memory when the Hub has
it on.

The first request is the first main request that offers tools (side requests such as
titles, quota probes and Gemini CLI's model router are left out); its size is eval's
`model_apis.size` (the content as compact JSON, at 4 characters a token), and the whole
body's bytes are kept beside it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

from amux.adapters import ADAPTERS
from amux.eval import model_apis
from amux.eval.agents import Homes, prepare, turn_args
from amux.eval.workspace import make_repository
from tests.mockmodel.agents import base_env, qwen_is_side
from tests.mockmodel.server import MockModel, Recorded, default_is_side
from tests.peers import peer_env

PROMPT = "Reply with the single word: ok"
ROOT_URL = frozenset({"claude", "gemini"})
"""Agents whose base URL is the server's root (ANTHROPIC_BASE_URL, GOOGLE_GEMINI_BASE_URL),
not the OpenAI-compatible `…/v1`."""
SETTINGS = {"opencode": {"npm_config_offline": "true"}, "kilo": {"npm_config_offline": "true"}}
"""Sandbox settings, not amux's: OpenCode installs its plugin package from npm into every
fresh config directory at start (offline that fails at once), and Kilo, its fork, too."""


class Measured(NamedTuple):
    size: model_apis.Size
    body_bytes: int
    """The whole request body's bytes, as compact UTF-8 JSON."""
    stderr: str
    """`amux run`'s and the agent's standard error."""


def headless_turn(agent: str, binary: Path, amux_home: Path, root: Path, model: MockModel,
                  extra: dict[str, str] | None = None, options: tuple[str, ...] = (),
                  timeout: float = 240) -> subprocess.CompletedProcess[str]:
    """Run one headless turn of `agent` (`binary`) through `amux run --endpoint` (the mock
    `model`, its model `mock-model`; `options`: more of amux's) with AMUX_HOME=`amux_home`,
    in homes under `root`."""
    adapter = ADAPTERS[agent]
    homes = Homes(root)
    homes.make()
    plan = homes.headless(adapter)
    make_repository(homes.work)
    env = prepare(plan).apply({**peer_env(agent, base_env(root)), "HOME": str(homes.home),
                               "TMPDIR": str(homes.scratch), "AMUX_HOME": str(amux_home),
                               "NO_PROXY": "127.0.0.1", "no_proxy": "127.0.0.1",
                               **SETTINGS.get(agent, {}), **(extra or {})})
    url = model.url if agent in ROOT_URL else model.base_url
    return subprocess.run(
        [sys.executable, "-m", "amux", "run", "--endpoint", url, "--model", "mock-model",
         *options, str(binary), "--", *turn_args(plan, PROMPT)],
        env=env, cwd=homes.work, stdin=subprocess.DEVNULL, capture_output=True, text=True,
        timeout=timeout)


def measure(agent: str, binary: Path, amux_home: Path, root: Path,
            extra: dict[str, str] | None = None) -> Measured:
    """`headless_turn` against a fresh mock model, and its first request measured."""
    with MockModel(is_side=qwen_is_side if agent == "qwen" else default_is_side) as model:
        done = headless_turn(agent, binary, amux_home, root, model, extra)
        first = next((request for request in model.main()
                      if model_apis.lists_tools(request.body)), None)
    if first is None or first.api is None:
        raise AssertionError(f"{agent} sent no model request with tools (exit "
                             f"{done.returncode}): {done.stderr[-2000:]}")
    body = json.dumps(first.body, ensure_ascii=False, separators=(",", ":")).encode()
    return Measured(model_apis.size(_api(first), first.body), len(body), done.stderr)


def _api(request: Recorded) -> model_apis.ModelApi:
    api = model_apis.api_for(request.path)
    assert api is not None
    return api
