"""The installed `amux` console script starts and reports its version."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from amux import __version__


def test_console_script_reports_its_version() -> None:
    script = shutil.which("amux") or str(Path(sys.executable).parent / "amux")
    done = subprocess.run([script, "--version"], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == f"amux {__version__}"
