"""Adding an agent takes its adapter module and its factory in the registry, nothing else: a
throwaway agent added that way to a copy of amux is seen by `amux run` (its help, a dry
run and a real launch with memory), `amux doctor`, `amux eval live` and `amux --help`."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import amux

PACKAGE = Path(amux.__file__).resolve().parent

TOY = '''"""A throwaway agent: `toy [--instructions TEXT] [--session ID] ARGS...`."""

from __future__ import annotations

from amux.adapters.base import (
    NOTHING, PROMPT, AgentRequest, Channel, Headless, LaunchPlan, ModelApi, NoTerminal, Probe,
    Requirement, first_line_version, merge_instructions, no_kept_session,
    no_quick_exit_cause, no_session_files, no_unpacked_code, no_user_settings, refuse,
)
from amux.envpatch import EnvPatch


class ToyAdapter:
    name = "toy"
    display_name = "Toy"
    channel: Channel = "cli"
    tracks_sessions = True
    version_args: tuple[str, ...] | None = ("--version",)
    probe_env = EnvPatch()
    version = first_line_version
    requires = (Requirement("flag", "--instructions", "the memory protocol reaches Toy"),)
    package: str | None = None
    quick_exit_hint: str | None = None
    model_api: ModelApi = "chat"
    endpoint_paths = NOTHING  # no --endpoint
    prompt_args = ("--print", PROMPT)
    without_terminal: NoTerminal = "fails"
    key_variables = ("TOY_API_KEY",)
    instruction_files = ("TOY.md",)
    mcp_tool_prefix: str | None = None
    session_files = no_session_files
    kept_session = no_kept_session
    user_settings = no_user_settings
    quick_exit_cause = no_quick_exit_cause
    unpacked_code = no_unpacked_code

    def user_instructions(self, args: tuple[str, ...], probe: Probe) -> tuple[str, ...]:
        return ()

    def starts_ui(self, args: tuple[str, ...]) -> bool:
        return "--print" not in args

    def isolated_env(self, home: str) -> EnvPatch:
        return EnvPatch()

    def new_session_ref(self, session_id: str, state_dir: str) -> str | None:
        return "toy-" + session_id

    def own_resume(self, ref: str) -> tuple[str, ...] | None:
        return ("--session", ref)

    def headless(self, home: str, scratch: str) -> Headless:
        return Headless(("--print", PROMPT), env=EnvPatch({"TOY_HOME": home}))

    def plan(self, request: AgentRequest) -> LaunchPlan:
        refuse(request.args, ("--session",), "Toy")
        session = ("--session", request.agent_session or "")
        if request.memory is None:
            return LaunchPlan((request.executable, *session, *request.args),
                              agent_session=request.agent_session)
        text = request.frozen_instructions or merge_instructions(
            list(request.user_instructions), request.memory.protocol) or ""
        return LaunchPlan((request.executable, *session, "--instructions", text,
                           *request.args),
                          env=EnvPatch(dict(request.memory.env), path=(request.memory.bin_dir,)),
                          channel="cli", instructions=text,
                          agent_session=request.agent_session)
'''

AGENT = """#!/bin/sh
if [ "$1" = --version ]; then echo "toy 1.0 --instructions --session"; exit 0; fi
printf '%s\\n' "$@" > "$TOY_RECORD"
command -v amux >> "$TOY_RECORD"
"""


@pytest.fixture
def copy_with_toy(tmp_path: Path) -> Path:
    """A copy of the amux package with the toy adapter module and its registry factory."""
    root = tmp_path / "pkg"
    shutil.copytree(PACKAGE, root / "amux", ignore=shutil.ignore_patterns("__pycache__"))
    (root / "amux" / "adapters" / "toy.py").write_text(TOY)
    registry = root / "amux" / "adapters" / "registry.py"
    text = registry.read_text()
    start = text.index("_FACTORIES: ")
    end = text.index("\n}", start)
    factory = ("def _toy() -> Adapter:\n    from amux.adapters.toy import ToyAdapter\n\n"
               "    return ToyAdapter()\n\n\n")
    registry.write_text(text[:start] + factory + text[start:end] + '\n    "toy": _toy,'
                        + text[end:])
    return root


def test_an_adapter_module_and_its_registry_factory_are_all_an_agent_needs(
        copy_with_toy: Path, tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "toy").write_text(AGENT)
    (bin_dir / "toy").chmod(0o755)
    record = tmp_path / "record"
    env = {key: value for key, value in os.environ.items() if not key.startswith("AMUX_")}
    env.update({"PYTHONPATH": str(copy_with_toy), "AMUX_HOME": str(tmp_path / "home"),
                "HOME": str(tmp_path), "TOY_RECORD": str(record),
                "PATH": f"{bin_dir}{os.pathsep}{env['PATH']}"})

    def amux_cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "amux", *args], env=env, cwd=tmp_path,
                              capture_output=True, text=True, timeout=120,
                              stdin=subprocess.DEVNULL)

    try:
        assert "toy" in amux_cli("--help").stdout
        assert ", toy; any other command runs unchanged" in " ".join(
            amux_cli("run", "--help").stdout.split())
        assert amux_cli("system", "config", "set", "memory.enabled", "true").returncode == 0
        dry = amux_cli("run", "--dry-run", "toy", "--", "hello")
        assert dry.returncode == 0, dry.stderr
        plan = json.loads(dry.stdout)
        assert plan["adapter"] == "toy" and plan["channel"] == "cli"
        launched = amux_cli("run", "toy", "--", "hello")
        assert launched.returncode == 0, launched.stderr
        argv = record.read_text().splitlines()
        assert argv[0] == "--session" and argv[1].startswith("toy-")
        assert "amux memory protocol" in argv[3] and "hello" in argv
        assert argv[-1].endswith("/amux")  # the memory CLI on the agent's PATH
        assert "resume it with: amux run --resume" in launched.stderr
        doctor = json.loads(amux_cli("doctor", "--json").stdout)
        [toy] = [agent for agent in doctor["agents"] if agent["name"] == "toy"]
        assert toy["found"] and toy["version"] == "toy 1.0 --instructions --session"
        assert "TOY_API_KEY for toy" in " ".join(amux_cli("eval", "live", "--help").stdout.split())
        evaluated = amux_cli("eval", "live", "--agent", "toy", "--endpoint",
                             "http://127.0.0.1:9/v1", "--model", "m")
        assert evaluated.returncode == 1 and "127.0.0.1:9" in evaluated.stderr, evaluated.stderr
    finally:
        amux_cli("hub", "stop")


def test_a_launch_imports_only_the_adapter_it_needs() -> None:
    """Each factory of the registry imports its module when called: looking up one agent
    (or an unknown one) imports no other agent's adapter."""
    code = ("import json, sys\nfrom amux.adapters import for_agent\n"
            "for_agent('/usr/bin/pi'), for_agent('aider')\n"
            "print(json.dumps(sorted(m for m in sys.modules if m.startswith('amux.adapters.'))))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, check=True)
    assert json.loads(done.stdout) == [
        "amux.adapters.base", "amux.adapters.fallback", "amux.adapters.pi",
        "amux.adapters.registry"]
