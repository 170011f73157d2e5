"""The installed `amux` console script, run as a user runs it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

SCRIPT = shutil.which("amux", path=str(Path(sys.executable).parent)) or "amux"


def console(home: Path, *args: str, stdin: str | None = None,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`amux ARGS` with AMUX_HOME=home and no other Hub configured; output as text."""
    environment = {key: value for key, value in os.environ.items()
                   if key not in ("AMUX_MEMORY_CONFIG", "AMUX_HUB", "AMUX_TOKEN")}
    environment.update({"AMUX_HOME": str(home), **(env or {})})
    return subprocess.run([SCRIPT, *args], input=stdin, capture_output=True, text=True,
                          env=environment, timeout=60)
