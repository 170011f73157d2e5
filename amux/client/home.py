"""Where AMUX_HOME is, computed with the standard library alone (SPEC §2).

`AMUX_HOME` wins; otherwise the same directory `platformdirs.user_data_dir("amux")`
gives (a test keeps the two in agreement): `$XDG_DATA_HOME/amux` when that is an
absolute path, else `~/.local/share/amux` (`~/Library/Application Support/amux`
on macOS), with `~` from an absolute `$HOME` or else the password database.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path


def _user_home(env: Mapping[str, str]) -> str:
    home = env.get("HOME", "")
    if os.path.isabs(home):
        return home.rstrip("/") or "/"
    import pwd

    return pwd.getpwuid(os.getuid()).pw_dir


def home_dir(env: Mapping[str, str] = os.environ) -> str:
    """The AMUX_HOME directory for this process's environment, as a string.

    Strings, not `pathlib`, on the CLI's path: importing pathlib costs every call ~6 ms.
    """
    explicit = env.get("AMUX_HOME", "")
    if explicit:
        return explicit
    xdg = env.get("XDG_DATA_HOME", "")
    if os.path.isabs(xdg):
        return os.path.join(xdg, "amux")
    if sys.platform == "darwin":
        return os.path.join(_user_home(env), "Library", "Application Support", "amux")
    return os.path.join(_user_home(env), ".local", "share", "amux")


def amux_home(env: Mapping[str, str] = os.environ) -> Path:
    """`home_dir` as a Path, for the installed amux (which imports pathlib anyway)."""
    from pathlib import Path

    return Path(home_dir(env))
