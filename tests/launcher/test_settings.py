"""amux/launcher/settings.py through `amux run`: a local-model user's default endpoint and
model (for every agent, or one) in the per-user settings file, so they are not typed each
time; the command line wins; the dry run names where each default came from; a resume
keeps what its session froze."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.hubproc import HubProcess
from tests.launcher.fakeagents import Launcher, enable
from tests.mockmodel import Text
from tests.mockmodel.ollama import FakeOllama

pytestmark = pytest.mark.timeout(180)

MODEL = "qwen3:14b"


def settings(*args: str) -> subprocess.CompletedProcess[str]:
    """`amux settings ARGS` as the user runs it (this test's own HOME)."""
    done = subprocess.run([sys.executable, "-m", "amux", "settings", *args],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done


def path() -> Path:
    return Path(os.environ["HOME"]) / ".config" / "amux" / "settings.toml"


@pytest.fixture
def launcher(hub: HubProcess, tmp_path: Path) -> Launcher:
    enable(hub)
    return Launcher(hub.home, tmp_path)


def test_a_default_endpoint_and_model_need_not_be_typed(launcher: Launcher) -> None:
    """`run.endpoint` and `run.model` set once: `amux run pi` launches against them (Pi's
    endpoint extension and model), the dry run says where they came from, and a resume
    keeps the endpoint it froze even after the settings change."""
    with FakeOllama([Text("ok")], [Text("again")], model=MODEL, loaded=65536) as ollama:
        settings("set", "run.endpoint", ollama.base_url)
        settings("set", "run.model", MODEL)
        dry = launcher.run("--dry-run", "pi", "--", "-p", "hi")
        assert dry.returncode == 0, dry.stderr
        plan = json.loads(dry.stdout)
        assert plan["defaults"] == {"endpoint": f"run.endpoint in {path()}",
                                    "model": f"run.model in {path()}"}
        assert plan["argv"][plan["argv"].index("--model") + 1] == f"amux_endpoint/{MODEL}"
        done = launcher.run("pi", "--", "-p", "hi")
        assert done.returncode == 0, done.stderr
        [record] = launcher.records()
        assert record["argv"][record["argv"].index("--model") + 1] == f"amux_endpoint/{MODEL}"
        [session] = launcher.sessions()
        frozen = json.loads((session / "state.json").read_text())["endpoint"]
        assert (frozen["url"], frozen["model"]) == (ollama.base_url, MODEL)
        settings("set", "run.model", "another")
        assert launcher.run("--resume", session.name, "--", "-p", "two").returncode == 0
    assert launcher.records()[1]["argv"] == [*record["argv"][:-1], "two"]


def test_the_command_line_and_one_agents_table_win(launcher: Launcher) -> None:
    """`--model` over the settings' model, `agents.claude.endpoint` over `run.endpoint` (with
    its own `endpoint-api`), `endpoint = ""` for no endpoint, `--no-endpoint` for one
    launch with the agent's own model."""
    local = "http://127.0.0.1:9/v1"
    settings("set", "run.endpoint", local)
    settings("set", "run.model", MODEL)
    settings("set", "agents.claude.endpoint", "http://127.0.0.1:9")
    settings("set", "agents.claude.endpoint-api", "anthropic")
    settings("set", "agents.qwen.endpoint", "")
    (launcher.bin / "qwen").write_text((launcher.bin / "pi").read_text())
    (launcher.bin / "qwen").chmod(0o755)

    def dry(*args: str) -> dict[str, object]:
        done = launcher.run("--dry-run", *args)
        assert done.returncode == 0, done.stderr
        plan: dict[str, object] = json.loads(done.stdout)
        return plan

    codex = dry("--model", "bigger", "codex", "--", "exec", "hi")
    assert codex["defaults"] == {"endpoint": f"run.endpoint in {path()}"}
    assert 'model="bigger"' in codex["argv"]
    claude = dry("claude")
    assert claude["defaults"] == {"endpoint": f"agents.claude.endpoint in {path()}",
                                  "endpoint-api": f"agents.claude.endpoint-api in {path()}",
                                  "model": f"run.model in {path()}"}
    assert isinstance(claude["env"], dict)
    assert claude["env"]["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:9"
    own = dry("--no-endpoint", "codex", "--", "exec", "hi")
    assert own["defaults"] == {} and own["window"] is None
    assert dry("qwen")["window"] is None  # its own table says: none


def test_an_endpoint_default_without_a_model_is_refused_naming_the_setting(
        launcher: Launcher) -> None:
    settings("set", "agents.codex.endpoint", "http://127.0.0.1:9/v1")
    done = launcher.run("--dry-run", "codex")
    assert (done.returncode, done.stderr) == (
        2, f"amux run: invalid_argument: agents.codex.endpoint in {path()} has no model beside "
        "it: set one (`amux settings set agents.codex.model NAME`) or give --model NAME\n")
    assert launcher.run("--dry-run", "--model", MODEL, "codex").returncode == 0
    assert launcher.run("--dry-run", "pi").returncode == 0  # not pi's


def test_run_help_shows_the_settings() -> None:
    done = subprocess.run([sys.executable, "-m", "amux", "run", "--help"],
                          capture_output=True, text=True, timeout=60)
    text = " ".join(re.sub(r"(?<=-)\n", "", done.stdout).split())  # as wrapped at hyphens
    assert f"Defaults for new sessions: {path()}" in text
    assert "amux settings set run.endpoint http://127.0.0.1:11434/v1" in text
    assert "--no-memory" in text and "--no-endpoint" in text
