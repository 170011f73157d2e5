"""How to install an agent at the version amux is tested with: the one source of install
hints (`amux run` for an agent it cannot find, `amux doctor`'s fixes, `amux eval live`).

The hint fits how amux itself was installed. In an amux checkout (`fixtures/npm/package.json`
beside the `amux` package: an editable install) the pinned agents are the ones `npm ci
--prefix fixtures/npm` installs, put first on PATH. An installed amux (pipx, uv, pip) has
no checkout: the hint is `npm install -g PACKAGE@VERSION`, the adapter's package at the
version pinned in fixtures/npm/package.json, which reaches the installed amux as package
data (`pins.json`, kept equal to the pins by tests/adapters/test_install.py). Never a bare
package name: on Node 20 a bare `npm install -g @qwen-code/qwen-code` picks 0.15.10, the
newest version that still declared Node 20.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

from amux.adapters.registry import ADAPTERS

CHECKOUT_NPM = Path(__file__).resolve().parents[2] / "fixtures" / "npm"
"""In an amux checkout: where the pinned agents are declared and installed."""
PINS = Path(__file__).with_name("pins.json")
"""The agents' versions pinned in fixtures/npm/package.json, shipped with amux."""


def pinned(package: str) -> str:
    """The version of an adapter's npm `package` that amux is tested with."""
    return str(json.loads(PINS.read_text(encoding="utf-8"))["versions"][package])


def install_hint(name: str) -> str | None:
    """The command that makes agent `name` (a key of `ADAPTERS`) the one on PATH, at the
    version amux is tested with; None for a command amux has no adapter for."""
    adapter = ADAPTERS.get(name)
    package = None if adapter is None else adapter.package
    if package is None:
        return None
    if (CHECKOUT_NPM / "package.json").is_file():
        pinned_bin = CHECKOUT_NPM / "node_modules" / ".bin"
        first = f'export PATH="{pinned_bin}:$PATH"'
        if (pinned_bin / name).exists():
            return first
        return f"npm ci --prefix {shlex.quote(str(CHECKOUT_NPM))} --no-audit --no-fund && {first}"
    return f"npm install -g {package}@{pinned(package)}"
