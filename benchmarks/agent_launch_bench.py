"""What `amux run` adds to a real agent's one-turn run (issue 12's numbers).

Each pinned agent CLI (fixtures/npm: Claude Code, Codex, Gemini CLI, OpenCode, Pi, GitHub
Copilot CLI, Qwen Code, Cline) runs one non-interactive turn against the loopback mock model
(tests/mockmodel), which answers with plain text and no tool call, so every run is the same
short conversation:

    claude -p PROMPT --output-format json
    codex exec --skip-git-repo-check PROMPT
    gemini -p PROMPT
    opencode run PROMPT
    kilo run PROMPT
    pi -p --model mock/mock-model PROMPT
    copilot -p PROMPT
    qwen -p PROMPT
    cline PROMPT

Each agent has the environment the tests' e2e runs give it (tests/mockmodel/agents.py):
its own home under the bench's directory, the mock as its model. Copilot unpacks its
235 MB package into `~/.cache/copilot/pkg` on first start; the bench starts it once
(`copilot --version`) before the dry run, so every arm finds the cache warm, as a user's
is after their first run. Qwen's side requests (its auto-memory extractor, its approval
classifier) are side requests to the mock (`qwen_is_side`), as OpenCode's title request is.

Three arms, interleaved (A, B, C per agent, round after round, each round starting
with the next arm), after one warm-up round that is discarded:

- A, bare: the agent started directly with exactly what `amux run --dry-run` says the
  launch adds (argv, environment changes, PATH), and the same MCP server (`amux memory
  mcp`, which Claude and Codex start themselves from the flags) reaching the same Hub:
  the dry run names a run directory that only a real launch creates, so the bare arm
  gets one of its own, made once before the rounds: a connection config holding a real
  token delegated with the dry run's binding (`POST /v1/delegate`, as the launcher
  does) and `bin/amux` linking the installed client. The plan's files (Pi's merged
  instructions, Gemini's settings, context file and policy, OpenCode's instructions and
  session plugin, Copilot's instructions file and MCP config, Qwen's system settings)
  are written once, with the dry run's texts, and its mirrors (Gemini's home) made once.
  Per round only the agent's own session name is new (Claude's, Gemini's, Qwen's
  `--session-id` and Copilot's `--session-id=`, Pi's `--session`; OpenCode and Codex
  name a new one themselves), as it is for every amux launch, so the agent never
  resumes a conversation.
  What A does not do is exactly the launcher's own work: the interpreter and imports,
  resolving the binding, the agent version (cached), asking Codex's app-server for the
  user's instructions, delegating and revoking the token, the run directory and the
  session state, Gemini's mirror, watching Codex's and OpenCode's session files,
  supervising, cleaning up.
- B: `amux run AGENT -- ARGS` through the installed `amux` against the harness's Hub
  (AMUX_HOME only: no AMUX_HUB, AMUX_TOKEN or AMUX_MEMORY_CONFIG).
- C (root only): `amux run --as-user USER …` as a throwaway Unix user with an amux
  principal, over the Hub's shared socket; the agent's model configuration is put in
  that user's home (Codex's config.toml, Gemini's settings.json, OpenCode's
  opencode.json, Pi's models.json; Qwen's is its OPENAI_BASE_URL and OPENAI_MODEL, which
  pass), the API keys are passed with `--pass-env`, and Claude's, Gemini's, Copilot's
  and Qwen's temp directories are ones the user owns. Copilot's model is configured by
  its environment alone (BYOK: COPILOT_PROVIDER_BASE_URL, COPILOT_MODEL), which an
  isolated run removes (the launcher's provider is never the target's) and `--pass-env`
  cannot bring back, so its C is `amux run --as-user USER --endpoint URL --model
  mock-model`, as an isolated Copilot user runs it (tests/e2e/test_copilot.py); that
  user's own package cache is unpacked in the warm-up round. The agent then runs with
  that user's home and config, so C − B also holds the agent's own differences; the
  profile separates the launcher's part.

Every arm runs its agent through a timed wrapper (`timed_agent`: a script named as the
agent that writes when the agent started and ended), so each run splits into the agent's
own time and the time outside it. A one-turn run of these CLIs varies by ±300 ms from
run to run, which a difference of whole runs has to average away (a paired median over
60 rounds still moves by ±50–80 ms, its bootstrap interval shown); the time outside the
agent is what the launcher adds, measured to a few ms, and the agent's own time, amux
minus bare, shows whether a launch changed how the agent runs (≈ 0 within its interval).

Every run must exit 0, print the model's answer, and send the model the memory tools
(the MCP agents) or the CLI protocol (Pi): the check that the arms are the same
conversation with memory wired. Targets: B − A ≤ 100 ms per agent, C − B ≤ 50 ms: the
paired median of the time outside the agent, with the whole runs' paired median not
above the target beyond its 95% interval (`report.agent_launch_targets`).

The profile (`launch_profile.py`) runs B and C again in one process with timers around
the launcher's steps and every Hub call; `amux run --dry-run` and `AGENT --version` are
timed as processes, the imports with `python -X importtime`.

Standalone, with a Hub of its own (no corpus):

    python -m benchmarks.agent_launch_bench [--rounds N]
        [--agents claude,codex,gemini,opencode,pi,copilot,qwen,kilo]

A PYTHONPATH of the harness is passed to every arm alike, so a snapshot of the tree
(`git archive HEAD | tar -x -C DIR`, run from DIR with PYTHONPATH=DIR) can be measured
while the working tree changes.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import pwd
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from amux.client.connection import Connection
from amux.client.transport import HubClient
from benchmarks import timing
from benchmarks.hub_bench import amux_command
from benchmarks.launch_bench import _throwaway_user

REPO = Path(__file__).resolve().parents[1]
NPM_BIN = REPO / "fixtures" / "npm" / "node_modules" / ".bin"
AGENTS = ("claude", "codex", "gemini", "opencode", "pi", "copilot", "qwen", "cline", "kilo")
PROMPT = "Say done."
ANSWER = "Done."
USER_ARGS = {
    "claude": ("-p", PROMPT, "--output-format", "json"),
    "codex": ("exec", "--skip-git-repo-check", PROMPT),
    "gemini": ("-p", PROMPT),
    "opencode": ("run", PROMPT),
    "pi": ("-p", "--model", "mock/mock-model", PROMPT),
    "copilot": ("-p", PROMPT),
    "qwen": ("-p", PROMPT),
    "cline": (PROMPT,),
    "kilo": ("run", PROMPT),
}
PASS_ENV = {"claude": ("ANTHROPIC_API_KEY",), "codex": ("MOCK_API_KEY",),
            "gemini": ("GEMINI_API_KEY",), "opencode": (), "pi": (), "copilot": (),
            "qwen": ("OPENAI_API_KEY",), "cline": (), "kilo": ()}
"""Credentials an isolated run drops unless passed (docs/isolation.md). Copilot's provider
key is one of the variables an isolated run removes even when passed (module doc)."""
RUN_TIMEOUT = 120.0
ARMS = ("bare", "amux", "isolated")
PROFILE = Path(__file__).with_name("launch_profile.py")
AGENT_STEP = "AGENT (supervised)"
DRY_RUNS = 3
VERSION_RUNS = 3
TOKEN_TTL = 86400


def npm_bin(directory: Path = NPM_BIN, agents: Sequence[str] = AGENTS) -> Path | None:
    """The fixtures' npm bin directory, None unless every agent is installed there."""
    return directory if all((directory / name).exists() for name in agents) else None


@dataclass
class Arm:
    """One way of running one agent: the argv, environment and cwd of each run."""

    argv: list[str]
    env: dict[str, str]
    cwd: Path
    fresh: dict[str, str] = field(default_factory=dict)
    """For the bare arm: option → template of a new session value per run (`{n}`)."""
    marks: Path | None = None
    """Where the arm's timed agent (`timed_agent`) writes when the agent starts and ends."""
    runs: int = 0

    def next_argv(self) -> list[str]:
        self.runs += 1
        argv = list(self.argv)
        for option, template in self.fresh.items():
            value = template.format(n=self.runs, uuid=uuid.uuid4())
            if option in argv:
                argv[argv.index(option) + 1] = value
            else:  # `--option=value` (Copilot's)
                index = next(i for i, arg in enumerate(argv) if arg.startswith(option + "="))
                argv[index] = f"{option}={value}"
        return argv


@dataclass
class Outcome:
    seconds: float
    ok: bool
    problem: str = ""
    warnings: str = ""
    """amux's own start-up warnings (a launch that wired no memory says so)."""
    agent_seconds: float | None = None
    """From the agent's start to its exit (the arm's marks); the rest of `seconds` is the
    launcher's (and the harness's own spawn, alike in every arm)."""


_TIMED_AGENT = """#!/bin/sh
# The agent, timed (benchmarks/agent_launch_bench.py): its start and its exit, in ns.
date +%s%N >> {marks}
{real} "$@"
status=$?
date +%s%N >> {marks}
exit $status
"""


def timed_agent(real: Path, directory: Path) -> tuple[Path, Path]:
    """A script named as the agent (its adapter is chosen by name) that runs `real` and
    writes when it started and ended to a marks file: (the script, its marks file).

    Every arm runs its agent through one, so each run splits into the agent's own time
    and the time outside it: what `amux run` adds is then measured apart from the
    agent's run-to-run spread (±300 ms for a 4 s turn), which a difference of whole runs
    has to average away. A target user can run it and write its marks (an isolated run).
    """
    directory.mkdir(parents=True, exist_ok=True)
    directory.chmod(0o755)
    marks = directory / "marks"
    marks.touch()
    marks.chmod(0o666)
    script = directory / real.name
    script.write_text(_TIMED_AGENT.format(marks=shlex.quote(str(marks)),
                                          real=shlex.quote(str(real))))
    script.chmod(0o755)
    return script, marks


# -- the agents' configuration against the mock model ------------------------------------


def _mock() -> Any:
    """The tests' mock model (imported late: `python -m benchmarks` runs from the repo root)."""
    from tests.mockmodel import MockModel, Text
    from tests.mockmodel.agents import qwen_is_side

    # OpenCode's title request (Chat Completions without tools) is a side request, and so
    # are Qwen's (qwen_is_side: the mock's defaults, its auto-memory extractor and its
    # approval classifier).
    return MockModel([Text(ANSWER)], is_side=lambda request: qwen_is_side(request) or (
        request.api == "chat" and not request.tools))


def agent_env(agent: str, root: Path, model: Any) -> dict[str, str]:
    """The environment the tests' e2e runs give `agent` against the mock (tests/mockmodel)."""
    from tests.mockmodel import agents

    maker = {"claude": agents.claude_env, "codex": agents.codex_env, "gemini": agents.gemini_env,
             "opencode": agents.opencode_env, "pi": agents.pi_env,
             "copilot": agents.copilot_env, "qwen": agents.qwen_env,
             "cline": agents.cline_env, "kilo": agents.kilo_env}[agent]
    env = dict(maker(root / agent, model))
    if agent in ("opencode", "kilo"):
        _opencode_installed(Path(env["XDG_CONFIG_HOME"]), agent)
    return env


def _opencode_installed(config_home: Path, agent: str = "opencode") -> None:
    """OpenCode (and Kilo, its fork) as a user has it after one run online: its config
    directory holds the `node_modules` it installs there at start (`@opencode-ai/plugin`,
    `@kilocode/plugin`). Without it every run would try that install again, which offline
    (this sandbox) fails after a variable wait that drowns the launcher's share in noise."""
    (config_home / agent / "node_modules").mkdir(parents=True, exist_ok=True)


def _copilot_unpacked(path: Path, env: dict[str, str], cwd: Path) -> None:
    """Copilot as a user has it after their first run: its package unpacked in the cache
    (`~/.cache/copilot/pkg`, 235 MB; a first start spends a second or more unpacking it).
    `--version` unpacks it; every arm then starts from the same warm cache."""
    done = subprocess.run([str(path), "--version"], env=env, cwd=cwd, capture_output=True,
                          text=True, stdin=subprocess.DEVNULL, timeout=RUN_TIMEOUT, check=False)
    cache = Path(env.get("COPILOT_PKG_CACHE_HOME") or Path(env["HOME"]) / ".cache" / "copilot")
    if done.returncode != 0 or not any((cache / "pkg").glob("*/*/cli-main.js")):
        raise RuntimeError(f"copilot --version did not unpack its package into {cache}/pkg "
                           f"(exit {done.returncode}): {done.stderr[-1500:]}")


def _provision_user(agent: str, user: str, model: Any) -> tuple[dict[str, str], Path]:
    """What an isolated run of `agent` needs in the user's own home: the model config
    where the agent looks for it (amux sets HOME, CODEX_HOME, PI_CODING_AGENT_DIR there),
    temp dirs for Claude, Gemini, Copilot and Qwen and a working directory; returns env
    overrides and the cwd."""
    from tests.mockmodel import agents
    from tests.mockmodel.agents import codex_config, gemini_settings, opencode_provider

    entry = pwd.getpwnam(user)
    home = Path(entry.pw_dir)
    made: list[Path] = []

    def directory(path: Path) -> Path:
        for parent in reversed([path, *path.parents]):
            if parent == home or home not in parent.parents:
                continue
            if not parent.exists():
                parent.mkdir(mode=0o700)
                made.append(parent)
        return path

    overrides: dict[str, str] = {}
    if agent == "claude":
        overrides["CLAUDE_CODE_TMPDIR"] = str(directory(home / "claude-tmp"))
    elif agent == "codex":
        config = directory(home / ".codex") / "config.toml"
        config.write_text(codex_config(model))
        made.append(config)
    elif agent == "gemini":
        settings = directory(home / ".gemini") / "settings.json"
        settings.write_text(json.dumps(gemini_settings()))
        made.append(settings)
        overrides["TMPDIR"] = str(directory(home / "gemini-tmp"))  # its error reports
    elif agent in ("opencode", "kilo"):  # amux resets its XDG directories to the user's
        config = directory(home / ".config" / agent) / f"{agent}.json"
        config.write_text(json.dumps(opencode_provider(model)))
        made.append(config)
        made.append(directory(home / ".config" / agent / "node_modules"))
        for path in (".local/share", ".cache", ".local/state"):
            directory(home / path)
    elif agent == "pi":
        models = directory(home / ".pi" / "agent") / "models.json"
        models.write_text(json.dumps({"providers": {"mock": {
            "baseUrl": model.base_url, "api": "openai-completions", "apiKey": "sk-dummy",
            "models": [{"id": "mock-model"}]}}}))
        made.append(models)
    elif agent == "cline":  # the provider `cline auth` writes
        settings = directory(home / ".cline" / "data" / "settings") / "providers.json"
        settings.write_text(json.dumps(agents.cline_providers(model)))
        made.append(settings)
        overrides["TMPDIR"] = str(directory(home / "cline-tmp"))
    elif agent in ("copilot", "qwen"):  # their model settings are environment variables
        overrides["TMPDIR"] = str(directory(home / f"{agent}-tmp"))  # Node's compile cache
    work = directory(home / "work" / agent)
    for path in made:
        os.chown(path, entry.pw_uid, entry.pw_gid)
    return overrides, work


# -- the bare arm from the dry run --------------------------------------------------------


def dry_run(agent_path: Path, args: Sequence[str], env: dict[str, str], cwd: Path,
            ) -> dict[str, Any]:
    done = subprocess.run([*amux_command(), "run", "--dry-run", str(agent_path), "--", *args],
                          env=env, cwd=cwd, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=RUN_TIMEOUT, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"amux run --dry-run {agent_path.name} failed: {done.stderr[-2000:]}")
    plan: dict[str, Any] = json.loads(done.stdout)
    return plan


def _file_entries(plan: dict[str, Any]) -> list[tuple[str, str | None]]:
    """(path, text or None) of the files the dry run says the launch writes (not its
    directories, mirrors or links)."""
    return [(str(entry["path"]), entry.get("text")) for entry in plan.get("writes", [])
            if entry.get("kind", "file") == "file"]


def _write_config(path: Path, connection: Connection, token: str, binding: str) -> None:
    """A connection config as the launcher writes one (SPEC Appendix A), 0600."""
    config: dict[str, Any] = {"version": 1, "hub": connection.hub, "token": token,
                              "binding": binding}
    if connection.hub.startswith("unix:"):
        config["hub_uid"] = connection.hub_uid
    if connection.ca_file:
        config["ca_file"] = connection.ca_file
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(json.dumps(config) + "\n")


def bare_arm(agent: str, plan: dict[str, Any], env: dict[str, str], cwd: Path, root: Path,
             connection: Connection) -> tuple[Arm, str | None]:
    """Arm A from the dry run (module doc); returns it and the delegated token's id."""
    files = _file_entries(plan)
    config = plan["env"].get("AMUX_MEMORY_CONFIG") or next(
        (path for path, _ in files if path.endswith("/memory.json")), None)
    state = next((path for path, _ in files if path.endswith("/state.json")), None)
    replacements: dict[str, str] = {}
    token_id = None
    bare = root
    bare.mkdir(parents=True, exist_ok=True)
    if config is not None:
        run_dir = Path(config).parent
        bare_run = bare / "run"
        (bare_run / "bin").mkdir(parents=True, exist_ok=True)
        with HubClient(connection) as hub:
            issued = hub.call("/v1/delegate", {"binding": plan["binding"], "ttl": TOKEN_TTL})
        token_id = str(issued["token_id"])
        _write_config(bare_run / Path(config).name, connection, str(issued["token"]),
                      str(plan["binding"]))
        link = bare_run / "bin" / "amux"
        if not link.exists():
            link.symlink_to(amux_command()[0])
        replacements[str(run_dir)] = str(bare_run)
    if state is not None:
        session_dir = Path(state).parent
        bare_session = bare / "session"
        bare_session.mkdir(exist_ok=True)
        replacements[str(session_dir)] = str(bare_session)

    def swap(value: str) -> str:
        for old, new in replacements.items():
            value = value.replace(old, new)
        return value

    from amux.adapters.base import PlanMirror
    from amux.launcher import mirrors

    mirrors.make([PlanMirror(swap(m["path"]), m["source"], tuple(m["own"]))
                  for m in plan.get("mirrors", [])])  # before the files inside them
    for path, text in files:
        if path == state or (plan["run_dir"] and path.startswith(plan["run_dir"] + "/")):
            continue  # the launch's own: the run directory is the arm's, made above
        if text is None:
            raise RuntimeError(f"the {agent} dry run names {path} without its content")
        target = Path(swap(path))
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(swap(text))  # its paths (the run dir, the session's) are the arm's
        target.chmod(0o600)
    bare_env = dict(env)
    for name, value in plan["env"].items():
        if value is None:
            bare_env.pop(name, None)
        else:
            bare_env[name] = swap(value)
    if plan.get("path_prepend"):
        bare_env["PATH"] = os.pathsep.join([*map(swap, plan["path_prepend"]),
                                            env.get("PATH", os.defpath)])
    argv = [swap(arg) for arg in plan["argv"]]
    fresh = {}
    if "--session-id" in argv or any(arg.startswith("--session-id=") for arg in argv):
        fresh["--session-id"] = "{uuid}"  # Claude, Gemini, Qwen, Copilot: a new session
    if "--session" in argv:  # Pi: the same file would resume the conversation
        value = argv[argv.index("--session") + 1]
        stem, dot, ext = Path(value).name.rpartition(".")
        fresh["--session"] = str(Path(value).with_name(f"{stem}-{{n}}{dot}{ext}"))
    return Arm(argv, bare_env, cwd, fresh), token_id


# -- running and checking -----------------------------------------------------------------


def _memory_seen(agent: str, requests: list[Any]) -> bool:
    """The model got the memory tools (the MCP agents) or the CLI protocol (Pi)."""
    main = [r for r in requests if r.api is not None and not r.side]
    if agent == "pi":
        return any("amux memory protocol" in r.instructions for r in main)
    return any("memory_search" in json.dumps(r.tools) for r in main)


def run_once(agent: str, arm: Arm, model: Any) -> Outcome:
    before = len(model.requests)
    argv = arm.next_argv()
    if arm.marks is not None:
        arm.marks.write_text("")
    started = time.perf_counter()
    try:
        done = subprocess.run(argv, env=arm.env, cwd=arm.cwd, capture_output=True, text=True,
                              stdin=subprocess.DEVNULL, timeout=RUN_TIMEOUT, check=False)
    except subprocess.TimeoutExpired:
        return Outcome(RUN_TIMEOUT, False, "timed out")
    elapsed = time.perf_counter() - started
    agent_seconds = None
    if arm.marks is not None:
        # The last two: a version or app-server probe before the run writes its own.
        marks = [int(line) for line in arm.marks.read_text().split()][-2:]
        if len(marks) == 2:
            agent_seconds = (marks[1] - marks[0]) / 1e9
    problem = ""
    if done.returncode != 0:
        problem = f"exit {done.returncode}: {done.stderr[-1500:]}"
    elif ANSWER not in done.stdout:
        problem = f"no answer in its output: {done.stdout[-500:]!r}"
    elif not _memory_seen(agent, model.requests[before:]):
        problem = "the model saw no amux memory tools or protocol"
    warnings = "\n".join(line for line in done.stderr.splitlines()
                         if line.startswith("amux run: warning"))
    if not problem and agent_seconds is None:
        problem = "the timed agent wrote no marks"
    return Outcome(elapsed, not problem, problem, warnings, agent_seconds)


def _median_ms(values: Sequence[float]) -> float | None:
    return round(statistics.median(values) * 1000, 1) if values else None


def _diff(high: Sequence[float], low: Sequence[float]) -> dict[str, Any]:
    """Median of the per-round differences with its 95% confidence interval, and the
    difference of the medians (ms)."""
    pairs = [h - lo for h, lo in zip(high, low, strict=True)]
    if not pairs:
        return {"paired_p50_ms": None, "of_medians_ms": None, "per_round_ms": []}
    low_ci, high_ci = timing.median_ci(pairs)
    return {"paired_p50_ms": _median_ms(pairs),
            "paired_ci95_ms": [round(low_ci * 1000, 1), round(high_ci * 1000, 1)],
            "of_medians_ms": round((statistics.median(high) - statistics.median(low)) * 1000, 1),
            "per_round_ms": [round(p * 1000, 1) for p in pairs]}


def _split_diff(whole: dict[str, list[float]], inside: dict[str, list[float]], high: str,
                low: str) -> dict[str, Any]:
    """`high` − `low` per round: whole runs, and split into the time outside the agent (the
    launcher's share: what the target is about) and the agent's own (≈ 0 unless the launch
    changed how the agent runs), each a paired median with its confidence interval."""
    outside = {arm: [w - i for w, i in zip(whole[arm], inside[arm], strict=True)]
               for arm in (high, low)}
    return {**_diff(whole[high], whole[low]),
            "outside_agent": _diff(outside[high], outside[low]),
            "agent_itself": _diff(inside[high], inside[low])}


# -- the profile ----------------------------------------------------------------------------


def _profile_run(argv_after_amux: list[str], env: dict[str, str], cwd: Path,
                 out: Path, importtime: bool = False) -> tuple[float, dict[str, Any], str]:
    """One launch through launch_profile.py: (process wall s, its report, stderr)."""
    prefix = [sys.executable, *(["-X", "importtime"] if importtime else []), str(PROFILE)]
    started = time.perf_counter()
    done = subprocess.run([*prefix, str(out), *argv_after_amux], env=env, cwd=cwd,
                          capture_output=True, text=True, stdin=subprocess.DEVNULL,
                          timeout=RUN_TIMEOUT, check=False)
    wall = time.perf_counter() - started
    if done.returncode != 0 or not out.exists():
        raise RuntimeError(f"profiled launch failed ({done.returncode}): {done.stderr[-2000:]}")
    return wall, json.loads(out.read_text()), done.stderr


_IMPORT_LINE = re.compile(r"^import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)")
SITE_MODULES = ("site", "_distutils_hack", "__editable__", "_virtualenv", "sitecustomize")


def _import_group(module: str) -> str:
    if module.startswith(SITE_MODULES):
        return "site and .pth hooks"
    top = module.split(".")[0]
    if top == "amux":
        return "amux"
    if top in sys.stdlib_module_names or top.startswith("_"):
        return "standard library"
    return top


def import_profile(stderr: str, top: int = 8) -> dict[str, Any]:
    """A `-X importtime` run's imports: self time by group (amux, the standard library,
    each third-party package, site), and the largest non-stdlib imports by cumulative
    time (ms)."""
    groups: dict[str, float] = {}
    largest: list[dict[str, Any]] = []
    for line in stderr.splitlines():
        match = _IMPORT_LINE.match(line)
        if match is None:
            continue
        module, own, cumulative = match.group(4), int(match.group(1)), int(match.group(2))
        group = _import_group(module)
        groups[group] = groups.get(group, 0.0) + own / 1000
        if group not in ("standard library", "site and .pth hooks"):
            largest.append({"module": module, "cumulative_ms": round(cumulative / 1000, 1),
                            "depth": (len(match.group(3)) - 1) // 2})
    largest.sort(key=lambda row: -row["cumulative_ms"])
    return {"self_ms_by_group": {k: round(v, 1) for k, v in
                                 sorted(groups.items(), key=lambda item: -item[1])},
            "largest": largest[:top]}


def _summarize_profiles(runs: list[tuple[float, dict[str, Any]]], measured_extra_ms: float | None,
                        interpreter_ms: float) -> dict[str, Any]:
    """Medians over the profiled launches of one agent and arm; `measured_extra_ms` is
    what the rounds measured for this arm over the one it is compared with (B − A,
    C − B). Steps come as a tree (each after the step it ran in), a step absent from a
    run counting 0 ms there."""
    def med(values: list[float], n: int | None = None) -> float:
        padded = values + [0.0] * ((n or len(values)) - len(values))
        return round(statistics.median(padded) * 1000, 1)

    steps: dict[tuple[str, str], list[float]] = {}
    counts: dict[tuple[str, str], int] = {}
    hub: dict[str, list[float]] = {}
    hub_counts: dict[str, int] = {}
    walls, totals, imports, agents, others = [], [], [], [], []
    for wall, report in runs:
        per: dict[tuple[str, str], float] = {}
        per_hub: dict[str, float] = {}
        for label, parent, seconds in report["spans"]:
            per[(parent, label)] = per.get((parent, label), 0.0) + seconds
            counts[(parent, label)] = counts.get((parent, label), 0) + 1
        for path, seconds in report["hub"]:
            per_hub[path] = per_hub.get(path, 0.0) + seconds
            hub_counts[path] = hub_counts.get(path, 0) + 1
        for key, seconds in per.items():
            steps.setdefault(key, []).append(seconds)
        for path, seconds in per_hub.items():
            hub.setdefault(path, []).append(seconds)
        walls.append(wall)
        totals.append(report["total_s"])
        imports.append(report["import_s"])
        agents.append(sum(s for (_, label), s in per.items() if label == AGENT_STEP))
        others.append(report["total_s"] - report["import_s"]
                      - sum(s for (parent, _), s in per.items() if not parent))
    n = len(runs)
    timed = {key: med(values, n) for key, values in steps.items()}

    def tree(parent: str) -> list[dict[str, Any]]:
        children = sorted((key for key in timed if key[0] == parent), key=lambda k: -timed[k])
        rows: list[dict[str, Any]] = []
        for key in children:
            path = f"{parent} / {key[1]}" if parent else key[1]
            rows.append({"step": key[1], "path": path, "depth": path.count(" / "),
                         "ms": timed[key], "calls": round(counts[key] / n, 1)})
            rows += tree(path)
        return rows

    launcher = [w - a for w, a in zip(walls, agents, strict=True)]
    start_exit = [w - t for w, t in zip(walls, totals, strict=True)]
    return {
        "runs": n,
        "process_ms": med(walls),
        "agent_supervised_ms": med(agents),
        "launcher_ms": med(launcher),
        "measured_extra_ms": measured_extra_ms,
        "python_start_and_exit_ms": med(start_exit),
        "python_c_pass_ms": interpreter_ms,
        "imports_ms": med(imports),
        "glue_ms": med(others),
        "steps": tree(""),
        "hub_calls": sorted(({"path": path, "ms": med(values, n),
                              "calls": round(hub_counts[path] / n, 1)}
                             for path, values in hub.items()), key=lambda row: -row["ms"]),
        "missing": sorted({name for _, report in runs for name in report["missing"]}),
    }


def profile(agents: dict[str, dict[str, Any]], runs: int, root: Path,
            extras: dict[str, dict[str, float | None]]) -> dict[str, Any]:
    """Where each agent's launch time goes (module doc); `agents[name]` has the arms,
    `extras[name][arm]` the measured paired extra of that arm (B − A, C − B)."""
    interpreter = [timing.run_process([sys.executable, "-c", "pass"])[0] for _ in range(5)]
    interpreter_ms = round(statistics.median(interpreter) * 1000, 1)
    result: dict[str, Any] = {"python_c_pass_ms": interpreter_ms}
    for name, setup in agents.items():
        amux_arm: Arm = setup["amux"]
        entry: dict[str, Any] = {}
        dry = []
        for _ in range(DRY_RUNS):
            started = time.perf_counter()
            dry_run(setup["path"], USER_ARGS[name], amux_arm.env, amux_arm.cwd)
            dry.append(time.perf_counter() - started)
        entry["dry_run_ms"] = _median_ms(dry)
        versions = []
        for _ in range(VERSION_RUNS):
            started = time.perf_counter()
            subprocess.run([str(setup["path"]), "--version"], env=amux_arm.env,
                           capture_output=True, stdin=subprocess.DEVNULL, timeout=RUN_TIMEOUT,
                           check=False)
            versions.append(time.perf_counter() - started)
        entry["agent_version_uncached_ms"] = _median_ms(versions)
        for arm_name in ("amux", "isolated"):
            arm: Arm | None = setup.get(arm_name)
            if arm is None:
                continue
            after_amux = arm.argv[len(amux_command()):]
            collected = []
            for index in range(runs):
                out = root / f"profile-{name}-{arm_name}-{index}.json"
                wall, report, _ = _profile_run(after_amux, arm.env, arm.cwd, out)
                collected.append((wall, report))
            entry[arm_name] = _summarize_profiles(collected, extras[name].get(arm_name),
                                                  interpreter_ms)
        if "isolated" in entry:
            entry["isolated"]["launcher_extra_ms"] = round(
                entry["isolated"]["launcher_ms"] - entry["amux"]["launcher_ms"], 1)
        out = root / f"profile-{name}-importtime.json"
        _, _, stderr = _profile_run(amux_arm.argv[len(amux_command()):], amux_arm.env,
                                    amux_arm.cwd, out, importtime=True)
        entry["imports"] = import_profile(stderr)
        result[name] = entry
    return result


# -- the benchmark --------------------------------------------------------------------------


def _reachable_by_others(home: Path) -> str | None:
    """Make the benchmark's own `home` traversable (the isolated user reaches the Hub's
    shared socket below it); the reason the isolated arm cannot run, if any directory
    above is not traversable (those are not ours to change)."""
    mode = home.stat().st_mode
    if not mode & 0o001:
        home.chmod((mode & 0o7777) | 0o711)
    for parent in home.parents:
        if not parent.stat().st_mode & 0o001:
            return f"{parent} is not traversable by other users"
    return None


@contextlib.contextmanager
def _isolated_user(home: Path, wanted: bool) -> Iterator[str | None]:
    if not wanted:
        yield None
        return
    with _throwaway_user(home) as user:
        yield user


def bench_agent_launch(home: Path, connection: Connection, rounds: int,
                       agents: Sequence[str] = AGENTS, profile_runs: int = 3,
                       bin_dir: Path | None = None, isolated: bool = True,
                       progress: Any = None) -> dict[str, Any]:
    """Arms A, B (and C as root) for each agent, `rounds` rounds after a warm-up."""
    say = progress or (lambda message: None)
    found = npm_bin(bin_dir or NPM_BIN, agents)
    if found is None:
        return {"skipped": f"the agents are not installed in {bin_dir or NPM_BIN}: run "
                           f"`npm ci --prefix {REPO / 'fixtures' / 'npm'}`"}
    root = Path(tempfile.mkdtemp(prefix="amux-bench-agents-"))
    tokens: list[str] = []
    try:
        root.chmod(0o711)
        runs_dir = root / "runs"
        runs_dir.mkdir(mode=0o711)
        isolated_skipped = None
        if not isolated:
            isolated_skipped = "not asked for"
        elif os.geteuid() != 0 or shutil.which("useradd") is None:
            isolated_skipped = "needs root and useradd"
        else:
            isolated_skipped = _reachable_by_others(home)
        want_isolated = isolated_skipped is None
        with _mock() as model, _isolated_user(home, want_isolated) as user:
            setups: dict[str, dict[str, Any]] = {}
            for name in agents:
                path = found / name
                work = root / "work" / name
                work.mkdir(parents=True)
                env = {**agent_env(name, root, model), "AMUX_HOME": str(home),
                       "AMUX_RUNS_DIR": str(runs_dir)}
                if os.environ.get("PYTHONPATH"):  # amux from a snapshot: every arm alike
                    env["PYTHONPATH"] = os.environ["PYTHONPATH"]
                if name == "copilot":
                    _copilot_unpacked(path, env, work)
                timed = {arm: timed_agent(path, root / "timed" / arm / name) for arm in ARMS}
                plan = dry_run(timed["bare"][0], USER_ARGS[name], env, work)
                bare, token_id = bare_arm(name, plan, env, work, root / "bare" / name,
                                          connection)
                bare.marks = timed["bare"][1]
                if token_id:
                    tokens.append(token_id)
                setup: dict[str, Any] = {
                    "path": path, "plan": plan, "bare": bare,
                    "amux": Arm([*amux_command(), "run", str(timed["amux"][0]), "--",
                                 *USER_ARGS[name]], env, work, marks=timed["amux"][1])}
                if user is not None:
                    overrides, user_work = _provision_user(name, user, model)
                    passed = [part for var in PASS_ENV[name] for part in ("--pass-env", var)]
                    if name == "copilot":  # its provider is environment only (module doc)
                        passed += ["--endpoint", model.base_url, "--model", "mock-model"]
                    setup["isolated"] = Arm(
                        [*amux_command(), "run", "--as-user", user, *passed,
                         str(timed["isolated"][0]), "--", *USER_ARGS[name]],
                        {**env, **overrides}, user_work, marks=timed["isolated"][1])
                setups[name] = setup
            arms = [arm for arm in ARMS if user is not None or arm != "isolated"]
            samples: dict[str, dict[str, list[float]]] = {
                name: {arm: [] for arm in arms} for name in agents}
            inside: dict[str, dict[str, list[float]]] = {  # the agent's own time per run
                name: {arm: [] for arm in arms} for name in agents}
            failures: dict[str, dict[str, list[str]]] = {
                name: {arm: [] for arm in arms} for name in agents}
            warnings: dict[str, dict[str, str]] = {name: {} for name in agents}
            started = time.perf_counter()
            for round_index in range(rounds + 1):
                # Each round starts with another arm, so no arm always follows the same
                # one (an agent's run can leave caches warm or busy for the next).
                turn = round_index % len(arms)
                for name in agents:
                    for arm in [*arms[turn:], *arms[:turn]]:
                        outcome = run_once(name, setups[name][arm], model)
                        if round_index == 0:
                            if not outcome.ok:
                                raise RuntimeError(f"warm-up of {name} ({arm}) failed: "
                                                   f"{outcome.problem}")
                            warnings[name][arm] = outcome.warnings
                            continue
                        if not outcome.ok:
                            failures[name][arm].append(outcome.problem)
                        samples[name][arm].append(outcome.seconds)
                        inside[name][arm].append(outcome.agent_seconds or 0.0)
                if round_index == 0:
                    say(f"agent launch: warm-up done in {time.perf_counter() - started:.0f} s; "
                        f"{rounds} rounds of {', '.join(agents)} × {', '.join(arms)}")
            rounds_seconds = time.perf_counter() - started
            result: dict[str, Any] = {
                "rounds": rounds, "warmup_rounds": 1, "arms": arms,
                "isolated": user is not None, "isolated_skipped": isolated_skipped,
                "rounds_seconds": round(rounds_seconds, 1),
                "prompt": PROMPT, "answer": ANSWER, "agents": {},
            }
            for name in agents:
                row: dict[str, Any] = {arm: timing.summarize(samples[name][arm])
                                       for arm in arms}
                row["user_args"] = list(USER_ARGS[name])
                row["version"] = _version(found / name, setups[name]["amux"].env)
                for key, high, low in (("amux_minus_bare", "amux", "bare"),
                                       ("isolated_minus_amux", "isolated", "amux")):
                    if high in arms:
                        row[key] = _split_diff(samples[name], inside[name], high, low)
                row["failures"] = {arm: problems for arm, problems in failures[name].items()
                                   if problems}
                row["amux_warnings"] = {arm: text for arm, text in warnings[name].items()
                                          if text}
                row["bare_env_changes"] = setups[name]["plan"]["env"]
                row["bare_path_prepend"] = bool(setups[name]["plan"].get("path_prepend"))
                result["agents"][name] = row
            if profile_runs > 0:
                say(f"agent launch: profile, {profile_runs} instrumented launches per agent "
                    "and arm")
                result["profile"] = profile(setups, profile_runs, root, {
                    name: {"amux": row["amux_minus_bare"]["paired_p50_ms"],
                           "isolated": row.get("isolated_minus_amux", {}).get("paired_p50_ms")}
                    for name, row in result["agents"].items()})
        return result
    finally:
        if tokens:
            with contextlib.suppress(Exception), HubClient(connection) as hub:
                for token_id in tokens:
                    hub.call("/v1/revoke", {"token_id": token_id})
        shutil.rmtree(root, ignore_errors=True)


def _version(path: Path, env: dict[str, str]) -> str:
    done = subprocess.run([str(path), "--version"], env=env, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=RUN_TIMEOUT, check=False)
    return ((done.stdout.strip() or done.stderr.strip()).splitlines() or ["?"])[0]


# -- standalone -------------------------------------------------------------------------------


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.agent_launch_bench",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=15,
                        help="measured rounds after the warm-up (default 15)")
    parser.add_argument("--profile-runs", type=int, default=3,
                        help="instrumented launches per agent and arm (0: no profile)")
    parser.add_argument("--agents", default=",".join(AGENTS),
                        help=f"comma-separated subset of {','.join(AGENTS)}")
    parser.add_argument("--npm-bin", type=Path, default=NPM_BIN,
                        help="where the agents are installed (default fixtures/npm/…/.bin)")
    parser.add_argument("--no-isolated", action="store_true",
                        help="skip the --as-user arm even as root")
    parser.add_argument("--json", type=Path, default=None, help="also write the JSON here")
    parser.add_argument("--markdown", action="store_true", help="print the Markdown section")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    from benchmarks import report
    from benchmarks.hub_bench import running_hub

    args = _arguments(argv)
    agents = [name for name in args.agents.split(",") if name]
    unknown = sorted(set(agents) - set(AGENTS))
    if unknown:
        raise SystemExit(f"unknown agents: {', '.join(unknown)}")
    workdir = Path(tempfile.mkdtemp(prefix="amux-bench-"))
    load_at_start = timing.load_average()
    started = time.perf_counter()
    try:
        with running_hub(workdir) as (connection, _env):
            result = bench_agent_launch(
                workdir, connection, args.rounds, agents, args.profile_runs, args.npm_bin,
                not args.no_isolated,
                progress=lambda message: print(f"[bench] {message}", file=sys.stderr,
                                               flush=True))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    whole = {"agent_launch": result, "machine": {
        **timing.machine_info(Path(tempfile.gettempdir())),
        "load_average_start": load_at_start},
        "elapsed_seconds": round(time.perf_counter() - started, 1),
        "command": " ".join(["python", "-m", "benchmarks.agent_launch_bench",
                             *(argv if argv is not None else sys.argv[1:])])}
    whole["targets"] = report.agent_launch_targets(result)
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(whole, ensure_ascii=False, indent=1) + "\n")
    print(report.agent_launch_text(whole))
    if args.markdown:
        print("\n" + report.agent_launch_markdown(whole))
    print(f"\nelapsed: {whole['elapsed_seconds']} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
