"""`amux eval live`: the scenarios through `amux run` and the real agent, against an endpoint.

1. A temporary AMUX_HOME whose Hub starts on demand with memory on (`EvalHub`).
2. **Capture**: the agent runs once through `amux run` against the recording proxy with no
   upstream (it answers "ok" itself), so its first request, with the real system prompt,
   the protocol and the full tool list, is measured before anything reaches the endpoint.
3. **Window check** (`amux.launcher.window`, as `amux run --endpoint` does it, with the
   measured prompt and more patience): refuse, naming the fix, when the endpoint serves
   the model with a window smaller than that prompt. The turns then pass
   `--no-window-check`: the run checked once, with the better measure.
4. **Samples**: for each scenario, N times: a fresh run root (throwaway git repository,
   agent home), the store reset to the scenario's seed, then each turn as its own
   `amux run AGENT -- <one non-interactive turn>` with the agent pointed at the proxy in
   front of the user's base URL. Evidence (`amux.eval.evidence`) and one category per
   sample (`amux.eval.classify`).
5. **Report**: the endpoint's prompt counts checked for truncation (`amux.eval.truncation`),
   pass rates printed,
   the JSON report written.

Exit status (as `amux eval live --help` says): 0 the evaluation ran and its results
stand (whatever the pass rates), 1 it could not run (`HarnessError`: agent missing,
an unwritable `--json FILE`, nothing answering at the endpoint, no request from the
agent, no Hub), 3 the context window does not hold the prompt: refused before any
sample, or the endpoint's counts show truncation after the run (the results are
reported, and do not measure the model).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from amux.adapters import ADAPTERS
from amux.adapters.base import ENDPOINT_API_OF, Adapter, without_userinfo
from amux.eval import model_apis, truncation
from amux.eval.agents import (
    KEY_VARIABLE,
    Endpoint,
    Homes,
    credential,
    find_binary,
    prepare,
    read_answer,
    turn_args,
)
from amux.eval.classify import LABELS, classify
from amux.eval.evidence import Turn, collect
from amux.eval.progress import progress_for
from amux.eval.proxy import Proxy
from amux.eval.report import VERSION, Result, Sample, print_table, totals, write_json
from amux.eval.scenarios import BY_NAME, SCENARIOS, Scenario
from amux.eval.workspace import EvalHub, HarnessError, changed, make_repository, snapshot
from amux.launcher import endpoints, window

DEFAULT_SAMPLES = 6
DEFAULT_TIMEOUT = 600.0
CAPTURE_PROMPT = "Reply with the single word: ok"
EXIT_RAN, EXIT_FAILED, EXIT_CONTEXT = 0, 1, 3
ASK_SECONDS = 10.0
"""The harness's patience with each question to the endpoint (`amux run` has less)."""
LOAD_SECONDS = 600.0
"""How long Ollama may take to load the model before the run."""
_WARNING = "amux run: warning: "
_KEPT = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "USER", "LOGNAME", "SHELL", "PYTHONPATH",
         "SYSTEMROOT")


@dataclass
class LiveOptions:
    agent: str
    base_url: str
    model: str
    samples: int = DEFAULT_SAMPLES
    json_path: Path | None = None
    agent_bin: str | None = None
    api_key_env: str | None = None
    """The variable holding the endpoint's key (default: the agent's usual one)."""
    scenarios: tuple[str, ...] = ()
    """Scenario names to run (all when empty)."""
    timeout: float = DEFAULT_TIMEOUT
    """Seconds one session may take."""
    keep: Path | None = None
    """Put the run roots here and keep them (else a temporary directory, removed)."""
    out: TextIO | None = None
    """Where the summary goes (standard output when None)."""
    progress: TextIO | None = None
    """Where progress goes (standard error when None): a bar when it is a terminal, plain
    lines otherwise (`amux.eval.progress`)."""
    env: Mapping[str, str] = field(default_factory=dict)
    """Variables added to every agent's environment, last (the caller's environment is
    not passed on but for `_KEPT`); tests give `npm_config_offline=true` for OpenCode."""


class _Session:
    """Everything one sample's turns share: the agent, its endpoint, the run root."""

    def __init__(self, agent: Adapter, binary: Path, endpoint: Endpoint, homes: Homes,
                 hub: EvalHub, timeout: float, extra: Mapping[str, str]) -> None:
        self.binary, self.endpoint, self.homes = binary, endpoint, homes
        self.hub, self.timeout, self.extra = hub, timeout, extra
        homes.make()
        self.plan = homes.headless(agent)
        make_repository(homes.work)
        self.env = self._environment()

    def _environment(self) -> dict[str, str]:
        env = {key: os.environ[key] for key in _KEPT if key in os.environ}
        env.update({"HOME": str(self.homes.home), "TMPDIR": str(self.homes.scratch),
                    "TERM": "dumb", "NO_COLOR": "1", "AMUX_HOME": str(self.hub.home),
                    "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"})
        env = prepare(self.plan).apply(env)
        self.options, key = self.endpoint.launch_options()
        env.update(key)
        env.update(self.extra)
        return env

    def turn(self, index: int, prompt: str, proxy: Proxy, tag: str,
             tokens: tuple[str, ...] = ()) -> Turn:
        turn = Turn(index, prompt)
        files_before = snapshot(self.homes.root)
        turn.store_before = self.hub.documents()
        proxy.tag = tag
        argv = [sys.executable, "-P", "-m", "amux", "run", *self.options, str(self.binary), "--",
                *turn_args(self.plan, prompt)]
        started = time.monotonic()
        process = subprocess.Popen(argv, cwd=self.homes.work, env=self.env,
                                   stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True, start_new_session=True)
        try:
            stdout, stderr = process.communicate(timeout=self.timeout)
        except subprocess.TimeoutExpired:
            turn.timed_out = True
            stdout, stderr = _stop(process)
        except BaseException:  # Ctrl-C: the agent is in its own session, stop it too
            _stop(process)
            raise
        turn.seconds = time.monotonic() - started
        turn.exit_code = process.returncode
        turn.stderr = stderr
        warned = [line.removeprefix(_WARNING) for line in stderr.splitlines()
                  if line.startswith(_WARNING)]
        turn.warnings = [warning for warning in warned if warning not in self.plan.limits]
        turn.answer = read_answer(self.plan, stdout)
        turn.store_after = self.hub.documents()
        changes = changed(files_before, snapshot(self.homes.root))
        return collect(turn, proxy.exchanges(tag), changes, self.homes.root, tokens)


def _stop(process: subprocess.Popen[str]) -> tuple[str, str]:
    """End a session that ran out of time: SIGTERM to `amux run` (it forwards the signal
    to the agent and cleans up), SIGKILL to its process group if it lingers."""
    for sig, wait in ((signal.SIGTERM, 15.0), (signal.SIGKILL, 5.0)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, sig)
        try:
            return process.communicate(timeout=wait)
        except subprocess.TimeoutExpired:
            continue
    return "", ""


def _writable(path: Path) -> None:
    """Refuse before minutes of work a `--json FILE` that could not be written at the end
    (the file itself is written only then, and is left untouched here)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise HarnessError(f"--json {path}: cannot create its directory: {error}") from None
    if path.is_dir() or not os.access(path if path.exists() else path.parent, os.W_OK):
        raise HarnessError(f"--json {path}: not a file this user can write")


def run_live(options: LiveOptions) -> tuple[int, dict[str, Any]]:
    """Run the evaluation; (exit status, the JSON report)."""
    agent = ADAPTERS[options.agent]
    selected = [BY_NAME[name] for name in options.scenarios] or list(SCENARIOS)
    if options.json_path is not None:
        _writable(options.json_path)
    started = time.monotonic()
    report: dict[str, Any] = {
        "version": VERSION, "agent": agent.name, "base_url": without_userinfo(options.base_url),
        "model": options.model, "samples": options.samples,
        "scenarios": [scenario.name for scenario in selected],
        "started_at": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    binary = find_binary(agent.name, options.agent_bin)
    if binary is None:
        from amux.adapters.install import install_hint

        raise HarnessError(f"{agent.name} not found: give --agent-bin PATH, or install it as "
                           f"amux is tested with it: {install_hint(agent.name)}")
    report["agent_binary"] = str(binary)
    given = credential(agent, options.api_key_env)
    runs = options.keep or Path(tempfile.mkdtemp(prefix="amux-eval-runs-"))
    runs.mkdir(parents=True, exist_ok=True)
    try:
        with EvalHub() as hub:
            code = _run(options, agent, binary, given, selected, hub, runs, report)
    finally:
        if options.keep is None:
            shutil.rmtree(runs, ignore_errors=True)
    report["seconds"] = round(time.monotonic() - started, 1)
    report["exit_code"] = code
    if options.json_path is not None:
        write_json(options.json_path, report)
    return code, report


def _run(options: LiveOptions, agent: Adapter, binary: Path,
         given: tuple[str, str] | None, selected: list[Scenario], hub: EvalHub, runs: Path,
         report: dict[str, Any]) -> int:
    out = options.out or sys.stdout
    problem = endpoints.unreachable(options.base_url, ASK_SECONDS)
    if problem:
        raise HarnessError(problem)
    print(f"amux eval live: measuring the first request {agent.name} sends ...",
          file=options.progress or sys.stderr, flush=True)
    size = _capture(agent, binary, hub, runs / "capture", options)
    key = given[1] if given is not None and given[0] == KEY_VARIABLE else None
    found = window.probe(options.base_url, options.model, ENDPOINT_API_OF[agent.model_api],
                         key, load_seconds=LOAD_SECONDS, ask_seconds=ASK_SECONDS)
    prompt = window.Prompt(agent.name, size.estimated_tokens,
                           f"{size.content_chars:,} characters of instructions, messages and "
                           f"{size.tools} tool definitions, at 4 characters a token")
    refused = window.refusal(options.model, prompt, found)
    warning = window.tight(prompt, found)
    report["context"] = {
        "prompt": {"content_chars": size.content_chars, "tools": size.tools,
                   "tools_chars": size.tools_chars,
                   "instructions_chars": size.instructions_chars,
                   "estimated_tokens": size.estimated_tokens},
        "window": {**found._asdict(), "ollama": found.ollama}, "refused": refused,
        "warning": warning,
    }
    print(f"amux eval live: {agent.name} through amux run, model {options.model} at "
          f"{without_userinfo(options.base_url)}", file=out)
    print(f"prompt: about {size.estimated_tokens:,} tokens ({size.content_chars:,} "
          f"characters, {size.tools} tools); window: "
          + (f"{found.tokens:,} tokens ({found.source})" if found.tokens
             else f"unknown ({found.source})"), file=out)
    if refused:
        print(f"amux eval: refusing to run: {refused}", file=out)
        return EXIT_CONTEXT
    if warning:
        print(f"warning: {warning}", file=out)
    results: list[Result] = []
    counts: list[tuple[int, int | None]] = []
    firsts: list[int] = []
    # The bar lives only while samples run: nothing else is printed meanwhile.
    with Proxy(options.base_url) as proxy, progress_for(
            options.progress or sys.stderr, len(selected) * options.samples) as progress:
        endpoint = Endpoint(proxy.base_url(options.base_url), options.model, given)
        for scenario in selected:
            result = Result(scenario)
            results.append(result)
            for number in range(1, options.samples + 1):
                progress.begin(scenario.name, number, options.samples)
                began = time.monotonic()
                hub.reset(scenario.seed)
                homes = Homes(runs / f"{scenario.name}-{number}")
                session = _Session(agent, binary, endpoint, homes, hub, options.timeout,
                                   options.env)
                turns = []
                for index, spec in enumerate(scenario.turns):
                    turn = session.turn(index, spec.prompt, proxy,
                                        f"{scenario.name}/{number}/{index + 1}",
                                        (*scenario.facts, *scenario.old))
                    turns.append(turn)
                    counts += list(zip(turn.content_chars, turn.prompt_tokens, strict=True))
                    if turn.prompt_tokens and turn.prompt_tokens[0]:
                        firsts.append(turn.prompt_tokens[0])
                outcome = classify(scenario, turns)
                result.samples.append(Sample(number, outcome, turns, time.monotonic() - began))
                progress.end(scenario.name, number, options.samples,
                             LABELS[outcome.category], outcome.flags)
    truncated = truncation.pinned(counts, found)
    report["context"]["reported_prompt_tokens"] = {
        "first_requests": firsts, "min": min(firsts) if firsts else None,
        "max": max(firsts) if firsts else None, "pinned": truncated}
    report["results"] = [result.to_json() for result in results]
    report["totals"] = totals(results)
    print("endpoint prompt tokens (first request of each session): "
          + (f"{min(firsts):,}–{max(firsts):,}" if firsts else "not reported"), file=out)
    print(file=out)
    print_table(results, out)
    if truncated:
        print(f"\nwarning: {truncated}. These results do not measure the model: fix the "
              "endpoint's context window and run again.", file=out)
        return EXIT_CONTEXT
    return EXIT_RAN


def _capture(agent: Adapter, binary: Path, hub: EvalHub, root: Path,
             options: LiveOptions) -> model_apis.Size:
    """The agent's first request, measured with the proxy answering locally."""
    hub.reset({})
    with Proxy(None) as capture:
        endpoint = Endpoint(capture.base_url(options.base_url), options.model)
        session = _Session(agent, binary, endpoint, Homes(root), hub,
                           min(options.timeout, 300.0), options.env)
        turn = session.turn(0, CAPTURE_PROMPT, capture, "capture")
        first = next((e for e in capture.exchanges() if e.model_request), None)
    if first is None or first.api is None:
        raise HarnessError(f"{agent.name} sent no model request through amux run (exit "
                           f"{turn.exit_code}): {turn.stderr.strip()[-1500:]}")
    if turn.warnings:
        raise HarnessError(f"amux run could not wire memory: {'; '.join(turn.warnings)}")
    return model_apis.size(first.api, first.body)
