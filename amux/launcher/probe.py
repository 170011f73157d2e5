"""The real `Probe` an adapter's hooks read the user's set-up through (files, short
commands), with the environment the agent will start from."""

from __future__ import annotations

import subprocess
from collections.abc import Mapping, Sequence


class SystemProbe:
    """Reads this machine's files and runs short commands for an adapter's hooks."""

    def __init__(self, env: Mapping[str, str], cwd: str) -> None:
        self._env = dict(env)
        self._cwd = cwd

    @property
    def env(self) -> Mapping[str, str]:
        return self._env

    @property
    def cwd(self) -> str:
        return self._cwd

    def read_text(self, path: str) -> str | None:
        try:
            with open(path, encoding="utf-8") as handle:
                return handle.read()
        except FileNotFoundError:
            return None

    def run(self, argv: Sequence[str], *, stdin: str = "", timeout: float) -> (
        tuple[int, str, str] | None
    ):
        try:
            done = subprocess.run(list(argv), input=stdin, capture_output=True, text=True,
                                  timeout=timeout, env=self._env, cwd=self._cwd)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return done.returncode, done.stdout, done.stderr
