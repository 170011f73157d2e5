"""How each real agent CLI runs one evaluated session.

The endpoint is the launcher's: every turn is `amux run --endpoint URL --model NAME
AGENT -- …` (`launch_options`), so the adapter points the agent at the endpoint (the
recording proxy in front of the user's base URL) exactly as it does for `amux run`.
What is left here, one class per agent in `AGENTS`: the temporary agent home under the
run's root (never the user's), the arguments of one non-interactive turn, and reading the
agent's final answer back.

- Claude Code: `claude -p … --output-format json --permission-mode acceptEdits` (file
  edits in the work directory are allowed, as a user approving them would).
- Codex: `codex exec -s workspace-write -o FILE …`.
- Pi: `pi -p …`.
- Gemini CLI: `gemini -p … --approval-mode auto_edit`; its home is the run's (the adapter's
  mirror of `~/.gemini` is made from it), the work directory trusted for the run by
  `GEMINI_CLI_TRUST_WORKSPACE` (no trusted-folders file is written).
- OpenCode: `opencode run …` (its default permissions allow edits; an `ask` would be
  rejected in `run`), every XDG directory under the run's home.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Protocol

from amux.adapters import gemini, opencode
from amux.eval.wire import WireName

KEY_VARIABLE = "AMUX_EVAL_API_KEY"
"""Where the agent's environment holds the user's key for the endpoint, if any."""


@dataclass(frozen=True)
class Endpoint:
    base_url: str
    """Where the agent sends its model requests (the proxy, with the user's path)."""
    model: str
    api_key: str | None
    """The user's key for the endpoint, if any; passed to the agent, never written down."""
    auth_token: str | None = None
    """Claude only: the user's ANTHROPIC_AUTH_TOKEN (a bearer token instead of a key)."""

    def launch_options(self) -> tuple[list[str], dict[str, str]]:
        """`amux run`'s options for this endpoint, and the environment holding its key."""
        options = ["--endpoint", self.base_url, "--model", self.model]
        if self.api_key:
            return [*options, "--endpoint-key-env", KEY_VARIABLE], {KEY_VARIABLE: self.api_key}
        if self.auth_token:
            return ([*options, "--endpoint-key-env", "ANTHROPIC_AUTH_TOKEN"],
                    {"ANTHROPIC_AUTH_TOKEN": self.auth_token})
        return options, {}


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
    limits: ClassVar[tuple[str, ...]]
    """Warnings `amux run` prints at every new launch of this agent that state a limit of
    its adapter, not a failure to wire memory (left out of a turn's warnings)."""

    def configure(self, homes: Homes) -> dict[str, str]:
        """The environment that keeps the agent in `homes.home` (its config directory)."""
        ...

    def turn(self, homes: Homes, prompt: str) -> list[str]:
        """The agent's arguments for one non-interactive turn (after `amux run AGENT --`)."""
        ...

    def answer(self, homes: Homes, stdout: str) -> str:
        """The agent's final answer of the turn."""
        ...


class Claude:
    name: ClassVar[str] = "claude"
    wire: ClassVar[WireName] = "anthropic"
    key_variable: ClassVar[str] = "ANTHROPIC_API_KEY"
    limits: ClassVar[tuple[str, ...]] = ()

    def configure(self, homes: Homes) -> dict[str, str]:
        (homes.home / ".claude").mkdir(parents=True, exist_ok=True)
        return {"CLAUDE_CONFIG_DIR": str(homes.home / ".claude"),
                "CLAUDE_CODE_TMPDIR": str(homes.scratch),
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1",
                "CLAUDE_CODE_MAX_RETRIES": "2"}

    def turn(self, homes: Homes, prompt: str) -> list[str]:
        return ["-p", prompt, "--output-format", "json", "--permission-mode", "acceptEdits"]

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
    limits: ClassVar[tuple[str, ...]] = ()

    def configure(self, homes: Homes) -> dict[str, str]:
        codex_home = homes.home / ".codex"
        codex_home.mkdir(parents=True, exist_ok=True)
        return {"CODEX_HOME": str(codex_home)}

    def turn(self, homes: Homes, prompt: str) -> list[str]:
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
    limits: ClassVar[tuple[str, ...]] = ()

    def configure(self, homes: Homes) -> dict[str, str]:
        agent_dir = homes.home / ".pi" / "agent"
        agent_dir.mkdir(parents=True, exist_ok=True)
        return {"PI_CODING_AGENT_DIR": str(agent_dir), "PI_OFFLINE": "1"}

    def turn(self, homes: Homes, prompt: str) -> list[str]:
        return ["-p", prompt]

    def answer(self, homes: Homes, stdout: str) -> str:
        return stdout.strip()


class Gemini:
    name: ClassVar[str] = "gemini"
    wire: ClassVar[WireName] = "gemini"
    key_variable: ClassVar[str] = "GEMINI_API_KEY"
    limits: ClassVar[tuple[str, ...]] = (gemini.LIMITS,)

    def configure(self, homes: Homes) -> dict[str, str]:
        """HOME is the run's (`amux.eval.live` sets it), so the adapter's mirror is made
        from `homes.home/.gemini`: API-key auth selected there (the adapter forces it for an
        endpoint launch too), and the run's work directory trusted by the variable."""
        dot = homes.home / ".gemini"
        dot.mkdir(parents=True, exist_ok=True)
        settings = dot / "settings.json"
        if not settings.exists():
            settings.write_text(json.dumps({"security": {"auth": {
                "selectedType": "gemini-api-key"}}}, indent=2) + "\n")
        return {"GEMINI_CLI_TRUST_WORKSPACE": "true"}

    def turn(self, homes: Homes, prompt: str) -> list[str]:
        return ["-p", prompt, "--approval-mode", "auto_edit"]

    def answer(self, homes: Homes, stdout: str) -> str:
        return stdout.strip()


class OpenCode:
    name: ClassVar[str] = "opencode"
    wire: ClassVar[WireName] = "chat"
    key_variable: ClassVar[str] = "OPENAI_API_KEY"
    limits: ClassVar[tuple[str, ...]] = ()

    def configure(self, homes: Homes) -> dict[str, str]:
        dirs = opencode.xdg_dirs(str(homes.home))
        for directory in dirs.values():
            Path(directory).mkdir(parents=True, exist_ok=True)
        return {**dirs, "OPENCODE_DISABLE_AUTOUPDATE": "1", "OPENCODE_DISABLE_MODELS_FETCH": "1"}

    def turn(self, homes: Homes, prompt: str) -> list[str]:
        return ["run", prompt]

    def answer(self, homes: Homes, stdout: str) -> str:
        return stdout.strip()  # the banner and colours go to standard error


AGENTS: dict[str, EvalAgent] = {agent.name: agent for agent in (
    Claude(), Codex(), Pi(), Gemini(), OpenCode())}


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
