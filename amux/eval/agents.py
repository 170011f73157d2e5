"""How each real agent CLI is pointed at the endpoint for one evaluated session.

One class per agent, registered in `AGENTS`. Each writes its own configuration into a
temporary agent home under the run's root (never the user's), returns the environment
that points the agent at the endpoint (the recording proxy in front of the user's base
URL), the arguments of one non-interactive turn (after `amux run AGENT --`), and reads
the agent's final answer back.

- Claude Code: `ANTHROPIC_BASE_URL`, the user's `ANTHROPIC_API_KEY`/`ANTHROPIC_AUTH_TOKEN`
  when set; `claude -p … --output-format json --permission-mode acceptEdits` (file edits
  in the work directory are allowed, as a user approving them would).
- Codex: a custom provider in `$CODEX_HOME/config.toml` (`wire_api = "responses"`,
  `base_url`, `env_key`); `codex exec -s workspace-write -o FILE …`.
- Pi: a provider in `$PI_CODING_AGENT_DIR/models.json` (`api = "openai-completions"`);
  `pi -p --model amux-eval/NAME …`.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Protocol

from amux.eval.wire import WireName

PROVIDER = "amux-eval"
KEY_VARIABLE = "AMUX_EVAL_API_KEY"
NO_KEY = "amux-eval-no-key"
"""The key an agent gets when the user has none (local endpoints ignore it)."""


@dataclass(frozen=True)
class Endpoint:
    base_url: str
    """Where the agent sends its model requests (the proxy, with the user's path)."""
    model: str
    api_key: str | None
    """The user's key for the endpoint, if any; passed to the agent, never written down."""
    auth_token: str | None = None
    """Claude only: the user's ANTHROPIC_AUTH_TOKEN (a bearer token instead of a key)."""


@dataclass(frozen=True)
class Homes:
    """One run root: the work directory, the agent's home and a scratch directory."""

    root: Path

    @property
    def work(self) -> Path:
        return self.root / "work"

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def scratch(self) -> Path:
        return self.root / "tmp"

    def make(self) -> None:
        for directory in (self.work, self.home, self.scratch):
            directory.mkdir(parents=True, exist_ok=True)


class EvalAgent(Protocol):
    name: ClassVar[str]
    wire: ClassVar[WireName]
    key_variable: ClassVar[str]
    """The user's variable holding the endpoint key, by default."""

    def configure(self, homes: Homes, endpoint: Endpoint) -> dict[str, str]:
        """Write the agent's own config under `homes.home`; the environment to add."""
        ...

    def turn(self, homes: Homes, endpoint: Endpoint, prompt: str) -> list[str]:
        """The agent's arguments for one non-interactive turn (after `amux run AGENT --`)."""
        ...

    def answer(self, homes: Homes, stdout: str) -> str:
        """The agent's final answer of the turn."""
        ...


class Claude:
    name: ClassVar[str] = "claude"
    wire: ClassVar[WireName] = "anthropic"
    key_variable: ClassVar[str] = "ANTHROPIC_API_KEY"

    def configure(self, homes: Homes, endpoint: Endpoint) -> dict[str, str]:
        env = {"CLAUDE_CONFIG_DIR": str(homes.home / ".claude"),
               "CLAUDE_CODE_TMPDIR": str(homes.scratch),
               "ANTHROPIC_BASE_URL": endpoint.base_url,
               "ANTHROPIC_API_KEY": endpoint.api_key or NO_KEY,
               "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1",
               "CLAUDE_CODE_MAX_RETRIES": "2"}
        # Every model Claude Code picks on its own (titles, sub-agents, aliases) is the one
        # under evaluation: the endpoint may serve no other.
        for variable in ("ANTHROPIC_SMALL_FAST_MODEL", "ANTHROPIC_DEFAULT_HAIKU_MODEL",
                         "ANTHROPIC_DEFAULT_SONNET_MODEL", "ANTHROPIC_DEFAULT_OPUS_MODEL",
                         "CLAUDE_CODE_SUBAGENT_MODEL"):
            env[variable] = endpoint.model
        if endpoint.auth_token:
            env["ANTHROPIC_AUTH_TOKEN"] = endpoint.auth_token
        (homes.home / ".claude").mkdir(parents=True, exist_ok=True)
        return env

    def turn(self, homes: Homes, endpoint: Endpoint, prompt: str) -> list[str]:
        return ["-p", prompt, "--model", endpoint.model, "--output-format", "json",
                "--permission-mode", "acceptEdits"]

    def answer(self, homes: Homes, stdout: str) -> str:
        for line in reversed(stdout.strip().splitlines()):
            try:
                value = json.loads(line)
            except ValueError:
                continue
            if isinstance(value, dict) and isinstance(value.get("result"), str):
                return str(value["result"])
        return stdout.strip()


class Codex:
    name: ClassVar[str] = "codex"
    wire: ClassVar[WireName] = "responses"
    key_variable: ClassVar[str] = "OPENAI_API_KEY"

    def configure(self, homes: Homes, endpoint: Endpoint) -> dict[str, str]:
        codex_home = homes.home / ".codex"
        codex_home.mkdir(parents=True, exist_ok=True)
        (codex_home / "config.toml").write_text(
            f"model = {json.dumps(endpoint.model)}\n"
            f'model_provider = "{PROVIDER}"\n\n'
            f"[model_providers.{PROVIDER}]\n"
            'name = "amux eval"\n'
            f"base_url = {json.dumps(endpoint.base_url)}\n"
            'wire_api = "responses"\n'
            f'env_key = "{KEY_VARIABLE}"\n'
            "request_max_retries = 2\n"
            "stream_max_retries = 2\n")
        return {"CODEX_HOME": str(codex_home), KEY_VARIABLE: endpoint.api_key or NO_KEY}

    def turn(self, homes: Homes, endpoint: Endpoint, prompt: str) -> list[str]:
        last = self._last_message(homes)
        last.unlink(missing_ok=True)
        return ["exec", "--skip-git-repo-check", "-s", "workspace-write", "-o", str(last),
                prompt]

    def answer(self, homes: Homes, stdout: str) -> str:
        try:
            return self._last_message(homes).read_text().strip()
        except OSError:
            return stdout.strip()

    @staticmethod
    def _last_message(homes: Homes) -> Path:
        return homes.scratch / "codex-last-message.txt"


class Pi:
    name: ClassVar[str] = "pi"
    wire: ClassVar[WireName] = "chat"
    key_variable: ClassVar[str] = "OPENAI_API_KEY"

    def configure(self, homes: Homes, endpoint: Endpoint) -> dict[str, str]:
        agent_dir = homes.home / ".pi" / "agent"
        agent_dir.mkdir(parents=True, exist_ok=True)
        # `apiKey` names a variable: Pi reads the key from the environment, not this file.
        (agent_dir / "models.json").write_text(json.dumps({"providers": {PROVIDER: {
            "baseUrl": endpoint.base_url, "api": "openai-completions",
            "apiKey": KEY_VARIABLE, "models": [{"id": endpoint.model}]}}}, indent=1))
        return {"PI_CODING_AGENT_DIR": str(agent_dir), "PI_OFFLINE": "1",
                KEY_VARIABLE: endpoint.api_key or NO_KEY}

    def turn(self, homes: Homes, endpoint: Endpoint, prompt: str) -> list[str]:
        return ["-p", "--model", f"{PROVIDER}/{endpoint.model}", prompt]

    def answer(self, homes: Homes, stdout: str) -> str:
        return stdout.strip()


AGENTS: dict[str, EvalAgent] = {agent.name: agent for agent in (Claude(), Codex(), Pi())}


def find_binary(name: str, override: str | None = None) -> Path | None:
    """`--agent-bin`, else NAME on PATH, else the pinned copy in a checkout's
    fixtures/npm/node_modules/.bin (this package's checkout, then the current directory)."""
    if override:
        path = Path(override).expanduser()
        return _absolute(path) if path.is_file() and os.access(path, os.X_OK) else None
    found = shutil.which(name)
    if found:
        return _absolute(Path(found))
    for base in (Path(__file__).resolve().parents[2], Path.cwd()):
        pinned = base / "fixtures" / "npm" / "node_modules" / ".bin" / name
        if pinned.is_file() and os.access(pinned, os.X_OK):
            return _absolute(pinned)
    return None


def _absolute(path: Path) -> Path:
    """Absolute, symlinks kept: `amux run` picks the adapter by the command's name, and
    `node_modules/.bin/claude` resolves to a `cli.js`."""
    return Path(os.path.abspath(path))
