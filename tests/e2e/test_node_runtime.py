"""An agent whose npm package needs a newer Node.js than the one on PATH: the real Pi 1.6.0
(it declares node >= 22.19 and dies at start on 20 with a syntax error) on the machine's
Node 20. `amux run` names the cause and the fix instead of guessing at a model or a key,
and `amux doctor` says the same."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.story import bounded
from tests.hubproc import HubProcess
from tests.mockmodel import MockModel, Text
from tests.mockmodel.agents import pi_env
from tests.peers import node22_dir, npm_bin

pytestmark = pytest.mark.timeout(180)


def machine_node() -> str:
    done = subprocess.run(["node", "--version"], capture_output=True, text=True, timeout=30,
                          check=True)
    return done.stdout.strip()


def test_pi_on_a_node_too_old_is_told_with_the_fix(memory_hub: HubProcess,
                                                   tmp_path: Path) -> None:
    node = machine_node()
    if int(node.lstrip("v").split(".")[0]) >= 22:
        pytest.skip(f"the machine's node is {node}: Pi 1.x starts on it")
    pi = npm_bin("pi")
    with MockModel([Text("never asked")]) as model:
        env = {**pi_env(tmp_path, model), "AMUX_HOME": str(memory_hub.home)}
        machines = [entry for entry in env["PATH"].split(os.pathsep)
                    if Path(entry) != node22_dir()]  # the machine's Node, not the tests' 22
        env["PATH"] = os.pathsep.join([str(pi.parent), *machines])
        done = bounded([sys.executable, "-m", "amux", "run", "pi", "--", "-p", "Hello there."],
                       env, tmp_path / "work")
        assert model.requests == []
    assert done.returncode == 1
    assert "enableCompileCache" in done.stderr  # Pi's own message, passed through
    assert done.stderr.splitlines()[-1] == (
        f"amux run: pi failed within 5 s: its package declares node >=22.19.0, and the node "
        f"on PATH is {node}: install Node.js 22 or newer (e.g. `nvm install 22`) and put it "
        "first on PATH")
    doctor = bounded([sys.executable, "-m", "amux", "doctor", "--json"], env,
                     tmp_path / "work")
    said = [finding for finding in json.loads(doctor.stdout)["findings"]
            if finding["message"].startswith("pi's package declares node")]
    assert said == [{**said[0], "message": "pi's package declares node >=22.19.0, and the node "
                     f"on PATH is {node}: pi does not start with it", "severity": "problem",
                     "fix": "install Node.js 22 or newer (e.g. `nvm install 22`) and put it "
                     "first on PATH, then check again"}]
