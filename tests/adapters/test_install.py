"""amux/adapters/install.py: the pins amux ships agree with fixtures/npm, and every install
hint (`amux run` without the agent, `amux doctor`'s fixes) fits how amux was installed: the
pinned agents of a checkout, else `npm install -g PACKAGE@VERSION`, never a bare package."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import amux
from amux.adapters import ADAPTERS
from amux.adapters import install as hints

ROOT = Path(__file__).resolve().parents[2]
PINS = {name: ADAPTERS[name].package for name in ADAPTERS}


def test_the_shipped_pins_are_the_checkouts() -> None:
    """pins.json (package data) holds exactly the agents' pins of fixtures/npm/package.json;
    after a pin changes there, copy it: the expected file is printed."""
    declared = json.loads((ROOT / "fixtures" / "npm" / "package.json").read_text())
    expected = {"source": "fixtures/npm/package.json", "versions": dict(sorted(
        (package, declared["dependencies"][package]) for package in PINS.values() if package))}
    shipped = json.loads(hints.PINS.read_text())
    assert shipped == expected, (f"{hints.PINS} is not fixtures/npm's pins; write it as:\n"
                                 + json.dumps(expected, indent=2))
    assert all(PINS.values()), "every adapter names the npm package that installs its agent"


def installed_amux(tmp_path: Path) -> Path:
    """A copy of the amux package outside any checkout, as pipx or `pip install .` leave it
    (no fixtures/npm beside it); run with PYTHONPATH at the returned directory."""
    site = tmp_path / "site"
    shutil.copytree(Path(amux.__file__).resolve().parent, site / "amux",
                    ignore=shutil.ignore_patterns("__pycache__"))
    return site


def run_amux(*args: str, site: Path | None, cwd: Path) -> subprocess.CompletedProcess[str]:
    """`python -m amux ARGS` with no agent on PATH (and, given `site`, that amux)."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    env["PATH"] = "/usr/bin:/bin"
    if site is not None:
        env["PYTHONPATH"] = str(site)
    return subprocess.run([sys.executable, "-m", "amux", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)


@pytest.mark.timeout(180)
def test_an_installed_amux_names_the_pinned_npm_install(tmp_path: Path) -> None:
    """After a tool install, `amux run qwen` without Qwen Code and `amux doctor` both name
    `npm install -g @qwen-code/qwen-code@0.24.4`: the pin, not the bare package that picks
    0.15 on Node 20, nor a checkout the user does not have."""
    site = installed_amux(tmp_path)
    pin = f"npm install -g @qwen-code/qwen-code@{hints.pinned('@qwen-code/qwen-code')}"
    run = run_amux("run", "qwen", site=site, cwd=tmp_path)
    assert run.returncode == 2
    assert run.stderr == (f"amux run: invalid_argument: agent 'qwen' not found (not on PATH and "
                          f"not an executable path); install it as amux is tested with it: "
                          f"{pin}; or give its path\n")
    doctor = run_amux("doctor", "--json", site=site, cwd=tmp_path)
    fixes = {entry["check"]: entry["fix"] for entry in json.loads(doctor.stdout)["findings"]}
    assert fixes["agent qwen"] == pin
    assert {fixes[f"agent {name}"] for name in ADAPTERS} == {
        f"npm install -g {package}@{hints.pinned(package)}" for package in PINS.values()
        if package}


def test_a_checkout_names_its_own_pinned_agents(tmp_path: Path) -> None:
    """In a checkout (this one: an editable install) the hint is its pinned agents."""
    bin_dir = ROOT / "fixtures" / "npm" / "node_modules" / ".bin"
    run = run_amux("run", "qwen", site=None, cwd=tmp_path)
    assert run.returncode == 2
    if (bin_dir / "qwen").exists():
        assert f'install it as amux is tested with it: export PATH="{bin_dir}:$PATH"' in run.stderr
    else:
        assert f"npm ci --prefix {ROOT / 'fixtures' / 'npm'} --no-audit --no-fund" in run.stderr
    assert hints.install_hint("my-agent") is None
