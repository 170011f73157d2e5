"""One `amux run …` in this process, with timers around the launcher's steps.

    python benchmarks/launch_profile.py OUT.json RUN-ARGS…

runs `amux RUN-ARGS…` (`run AGENT -- ARGS`, `run --as-user USER AGENT -- ARGS`) as the
`amux` console script would, with wall-clock timers wrapped around the launcher's
functions (no cProfile: its per-call cost would inflate the Python-heavy steps), and
writes what it saw to OUT.json: the imports, every timed step with the steps it ran in, every
Hub call, and the total from this script's first line. The process's own start and exit
(interpreter, site) are what the caller's wall time has beyond that total.

A name missing from the tree (the launcher changed) is listed under `missing`, not an
error: the profile then shows less detail. Used by benchmarks/agent_launch_bench.py, which
also runs it under `python -X importtime` once per agent for the import list.
"""

import time

STARTED = time.perf_counter()

import functools  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
from typing import Any  # noqa: E402

_spans: list[tuple[str, str, float]] = []
"""(label, the labels of the timed calls it ran inside, joined with " / ", seconds)."""
_hub: list[tuple[str, float]] = []
_missing: list[str] = []
_stack: list[str] = []


def _wrap(owner: Any, attr: str, label: str) -> None:
    """Time every call of `owner.attr` as `label`, inside the timed calls running now."""
    original = getattr(owner, attr, None)
    if original is None:
        _missing.append(label)
        return

    @functools.wraps(original)
    def timed(*args: Any, **kwargs: Any) -> Any:
        parent = " / ".join(_stack)
        _stack.append(label)
        began = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            del _stack[-1]
            _spans.append((label, parent, time.perf_counter() - began))

    setattr(owner, attr, timed)


def _wrap_hub(client_class: Any) -> None:
    """Time every Hub request (by API path) and connection set-up, outside the nesting."""
    call, connect = client_class.call, getattr(client_class, "_connect", None)

    @functools.wraps(call)
    def timed_call(self: Any, path: str, body: Any) -> Any:
        began = time.perf_counter()
        try:
            return call(self, path, body)
        finally:
            _hub.append((path, time.perf_counter() - began))

    client_class.call = timed_call
    if connect is None:
        _missing.append("HubClient._connect")
        return

    @functools.wraps(connect)
    def timed_connect(self: Any) -> Any:
        began = time.perf_counter()
        try:
            return connect(self)
        finally:
            _hub.append(("(connect + peer check)", time.perf_counter() - began))

    client_class._connect = timed_connect


STEPS = (
    # (module, attribute, label); attributes absent from the tree are listed as missing
    ("amux.launcher.run", "prepare", "prepare: resolve, plan"),
    ("amux.launcher.run", "apply", "apply: freeze, wire, run, clean up"),
    ("amux.launcher.run", "_discover", "discover the binding"),
    ("amux.launcher.run", "_version", "agent --version (cache)"),
    ("amux.launcher.run", "_wire", "wire: token, run dir"),
    ("amux.launcher.run", "_learn_session", "learn the agent's session"),
    ("amux.materializer.helper", "Helper", "start the helper acting as the user"),
    ("amux.launcher.rundirs", "verified", "verify the runs root"),
    ("amux.launcher.wiring", "resolve", "binding (POST /v1/binding)"),
    ("amux.launcher.wiring", "resolve_for", "the user's binding (owner's preview)"),
    ("amux.launcher.wiring", "delegate", "delegate a token"),
    ("amux.launcher.wiring", "grant_for", "grant a token for the user"),
    ("amux.launcher.wiring", "check", "check the agent's token"),
    ("amux.launcher.wiring", "revoke", "revoke the token"),
    ("amux.launcher.wiring", "clean_stale_runs", "clean stale run dirs"),
    ("amux.launcher.rundirs", "make", "write the run dir"),
    ("amux.launcher.rundirs", "remove", "remove the run dir"),
    ("amux.launcher.state", "save", "save session state"),
    ("amux.launcher.planfiles", "write", "write plan files"),
    ("amux.launcher.mirrors", "make", "make the plan's mirrors"),
    ("amux.launcher.mirrors", "restore", "restore the plan's mirrors"),
    ("amux.protocol.render", "render", "render protocol"),
    ("amux.launcher.supervise", "supervise", "AGENT (supervised)"),
    ("amux.hub.control", "answering", "is the local Hub answering"),
    ("amux.hub.control", "start", "start the local Hub"),
    ("amux.adapters.codex_layers", "_asked", "codex app-server config/read"),
    ("amux.adapters.codex_layers", "_read", "codex config files read"),
    ("amux.launcher.rundirs", "build_client", "build the single-file client copy"),
)


def _instrument() -> None:
    import importlib

    from amux.client.transport import HubClient

    _wrap_hub(HubClient)
    for module_name, attr, label in STEPS:
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            _missing.append(label)
            continue
        _wrap(module, attr, label)
    from amux.adapters import ADAPTERS

    for adapter_class in {type(adapter) for adapter in ADAPTERS.values()}:
        name = getattr(adapter_class, "name", adapter_class.__name__)
        _wrap(adapter_class, "user_instructions", f"{name}: user instructions")
        _wrap(adapter_class, "plan", f"{name}: plan")
    for module_name in ("amux.launcher.session_watch", "amux.launcher.agent_config"):
        try:
            watch = importlib.import_module(module_name).SessionWatch
        except (ImportError, AttributeError):
            continue
        _wrap(watch, "__init__", "session watch: list before")
        _wrap(watch, "finish", "session watch: list after, pick")
        break
    else:
        _missing.append("SessionWatch")


def main() -> int:
    out, args = sys.argv[1], sys.argv[2:]
    began = time.perf_counter()
    from amux.cli import main as cli
    from amux.cli import run as _cli_run  # noqa: F401  (what `amux run` imports first)
    from amux.launcher import run as _launcher  # noqa: F401

    imported = time.perf_counter() - began
    instrument_began = time.perf_counter()
    _instrument()
    instrumented = time.perf_counter() - instrument_began
    status = 1
    try:
        status = cli.main(args)
    finally:
        Path = __import__("pathlib").Path
        Path(out).write_text(json.dumps({
            "status": status, "import_s": imported, "instrument_s": instrumented,
            "total_s": time.perf_counter() - STARTED - instrumented,
            "spans": _spans, "hub": _hub, "missing": _missing}))
    return status


if __name__ == "__main__":
    sys.exit(main())
