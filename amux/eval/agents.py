"""How `amux eval live` runs each real agent CLI: what its adapter says, acted on here.

The endpoint is the launcher's: every turn is `amux run --endpoint URL --model NAME
--no-window-check AGENT -- …` (`Endpoint.launch_options`), so the adapter points the agent
at the endpoint (the recording proxy in front of the user's base URL) exactly as it does
for `amux run`; the run checked the window itself, once.
What one headless turn is (the agent's home under the run's root, never the user's; the
arguments of one non-interactive turn; where its answer is) is the adapter's `headless`
plan (`amux.adapters.base.Headless`): `prepare`, `turn_args` and `read_answer` act on it.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from amux.adapters.base import PROMPT, Adapter, Headless
from amux.envpatch import EnvPatch

KEY_VARIABLE = "AMUX_EVAL_API_KEY"
"""Where the agent's environment holds the user's key for the endpoint, if any."""


@dataclass(frozen=True)
class Endpoint:
    base_url: str
    """Where the agent sends its model requests (the proxy, with the user's path)."""
    model: str
    credential: tuple[str, str] | None = None
    """The variable the agent gets the user's credential in, and its value (`credential`);
    passed to the agent, never written down."""

    def launch_options(self) -> tuple[list[str], dict[str, str]]:
        """`amux run`'s options for this endpoint, and the environment holding its key;
        without the launcher's window check (the run checked the window once, against
        the agent's measured request)."""
        options = ["--endpoint", self.base_url, "--model", self.model, "--no-window-check"]
        if self.credential is None:
            return options, {}
        variable, value = self.credential
        return [*options, "--endpoint-key-env", variable], {variable: value}


def credential(adapter: Adapter, given: str | None,
               environ: Mapping[str, str] = os.environ) -> tuple[str, str] | None:
    """The user's credential for the endpoint: the variable `given` (`--endpoint-key-env`),
    else the first of the agent's `key_variables` that is set. A key is handed on as
    `KEY_VARIABLE`; another kind of credential (Claude's bearer token) under its own name,
    which tells the adapter what it is."""
    names = (given,) if given else adapter.key_variables
    for index, name in enumerate(names):
        value = environ.get(name)
        if value:
            return (KEY_VARIABLE if index == 0 else name), value
    return None


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

    def headless(self, adapter: Adapter) -> Headless:
        """The adapter's plan of one headless turn in these homes."""
        return adapter.headless(str(self.home), str(self.scratch))


def prepare(plan: Headless) -> EnvPatch:
    """Make the plan's directories and files; what keeps the agent there in its
    environment."""
    for directory in plan.dirs:
        Path(directory).mkdir(parents=True, exist_ok=True)
    for file in plan.files:
        Path(file.path).write_text(file.text)
        os.chmod(file.path, file.mode)
    return plan.env


def turn_args(plan: Headless, prompt: str) -> list[str]:
    """The agent's arguments for one turn (after `amux run AGENT --`); the answer file of
    the turn before is removed first."""
    if plan.answer_file is not None:
        Path(plan.answer_file).unlink(missing_ok=True)
    return [prompt if arg == PROMPT else arg for arg in plan.args]


def read_answer(plan: Headless, stdout: str) -> str:
    """The agent's final answer of the turn: its answer file, else from its stdout."""
    if plan.answer_file is not None:
        try:
            return Path(plan.answer_file).read_text().strip()
        except OSError:
            return stdout.strip()
    return plan.answer(stdout)


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
