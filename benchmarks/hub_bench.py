"""The Hub and the memory CLI as an agent uses them (issue 3's numbers).

A real Hub process serves the benchmark corpus; every figure is compared with a
floor measured in the same run:

- CLI cold round trip: `amux memory show` of a 3 KiB document as a new process
  (Hub warm), against `python3 -c pass`; target ≤ 2.0× (issue 14).
- Whole-process search: `amux memory search` with the 8-term query over the full
  scope, against `rg -F -i` over the same files; target ≤ 2.5× (issue 14).

Both as the README runs them (the headline rows): the installed `amux`, the local
default connection of `AMUX_HOME` (no `AMUX_HUB`/`AMUX_TOKEN`/`AMUX_MEMORY_CONFIG`),
the Hub already running; again with `AMUX_HUB` + `AMUX_TOKEN` (what an agent's run
directory does not use either, kept for comparison); and `show` when the Hub must
first be started on demand (a fresh home each time, stopped after).
- Hub throughput: 8 concurrent keep-alive connections from one asyncio load
  generator replaying pre-built requests: `get` of a 3 KiB document
  (target ≥ 2,000/s) and durable conditional upserts (target ≥ 300/s).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from amux.client.connection import Connection
from amux.client.transport import HubClient
from benchmarks import timing

THREADS = 8


def _pick_documents(scope_dir: Path) -> tuple[str, list[str]]:
    """A corpus document of about 3 KiB to read, and others to overwrite.

    The corpus holds exactly the scope's 1,024-document limit, so the benchmark
    reads and rewrites existing documents rather than adding any.
    """
    sized = sorted((path.stat().st_size, str(path.relative_to(scope_dir)))
                   for path in scope_dir.rglob("*.md"))
    read = min(sized, key=lambda item: abs(item[0] - 3072))[1]
    writes = [path for _size, path in sized if path != read and _size < 8192][:THREADS]
    return read, writes


def amux_command() -> list[str]:
    """The `amux` installed next to this interpreter (a venv's own, not a PATH shim)."""
    script = Path(sys.executable).parent / "amux"
    return [str(script)] if script.exists() else [sys.executable, "-m", "amux"]


async def _drive(socket_path: str, requests: list[bytes], seconds: float) -> int:
    """Replay pre-built requests on one keep-alive connection; responses completed."""
    reader, writer = await asyncio.open_unix_connection(socket_path)
    done = 0
    deadline = time.perf_counter() + seconds
    try:
        while time.perf_counter() < deadline:
            writer.write(requests[done % len(requests)])
            head = await reader.readuntil(b"\r\n\r\n")
            length = int(head.split(b"Content-Length: ", 1)[1].split(b"\r\n", 1)[0])
            body = await reader.readexactly(length)
            if not head.startswith(b"HTTP/1.1 200"):
                raise RuntimeError(f"Hub answered {head[:40]!r}: {body[:200]!r}")
            done += 1
    finally:
        writer.close()
        await writer.wait_closed()
    return done


def _request(path: str, body: dict[str, Any], token: str) -> bytes:
    payload = json.dumps(body).encode()
    return (f"POST {path} HTTP/1.1\r\nHost: amux-hub\r\nAuthorization: Bearer {token}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(payload)}\r\n\r\n"
            ).encode() + payload


def _throughput(connection: Connection, seconds: float, read: str, writes: list[str],
                write: bool) -> float:
    """Requests per second over `THREADS` keep-alive connections for `seconds`.

    One asyncio load generator with pre-built requests keeps the generator's own
    cost per request far below the Hub's. Writes cycle through contents whose
    revisions are known in advance, so each conditional upsert names the right one.
    """
    token = connection.token or ""
    plans: list[list[bytes]] = []
    with HubClient(connection) as client:
        for index in range(THREADS):
            if not write:
                plans.append([_request("/v1/memory/get", {"path": read}, token)])
                continue
            path = writes[index]
            contents = [f"writer {index} version {v}\n" * 64 for v in range(2)]
            current = client.call("/v1/memory/get", {"path": path})["revision"]
            client.call("/v1/memory/upsert", {"path": path, "content": contents[1],
                                              "expected_revision": current})
            revisions = [hashlib.sha256(c.encode()).hexdigest() for c in contents]
            plans.append([
                _request("/v1/memory/upsert", {"path": path, "content": contents[v],
                                               "expected_revision": revisions[1 - v]}, token)
                for v in range(2)
            ])
    socket_path = connection.hub.removeprefix("unix:")

    async def all_connections() -> list[int]:
        return await asyncio.gather(*(_drive(socket_path, plan, seconds) for plan in plans))

    return sum(asyncio.run(all_connections())) / seconds


@contextlib.contextmanager
def hub_process(home: Path, wrapper: tuple[str, ...] = ()
                ) -> Iterator[tuple[subprocess.Popen[str], Connection]]:
    """A Hub process on `home` (`wrapper` in front of it, e.g. `prlimit`), memory on,
    and its owner's connection; stopped at the end (SIGTERM) unless the caller already
    ended it (the fault benchmark kills it)."""
    process = subprocess.Popen([*wrapper, sys.executable, "-m", "amux.hub.server", str(home)],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert process.stdout is not None
        status = json.loads(process.stdout.readline())
        owner = json.loads((home / "credentials" / "owner.json").read_text())
        connection = Connection(status["address"], owner["token"], None, None, "benchmark")
        with HubClient(connection) as client:
            client.call("/v1/admin/config",
                        {"action": "set", "key": "memory.enabled", "value": "true"})
        yield process, connection
    finally:
        if process.poll() is None:
            process.terminate()
        process.communicate(timeout=30)


@contextlib.contextmanager
def running_hub(home: Path) -> Iterator[tuple[Connection, dict[str, str]]]:
    """A Hub on `home` (its memory root holds the corpus), memory on, with a shared
    socket for isolated runs: its owner's connection and the environment a CLI needs."""
    from amux.hub.config import ConfigFile

    shared = home / "shared" / "hub.sock"
    ConfigFile(home).set("listeners.shared_socket", str(shared))  # listeners open at start
    with hub_process(home) as (_process, connection):
        with HubClient(connection) as client:  # memory history takes in the corpus first
            while not client.call("/v1/status", {}).get("history_caught_up", True):
                time.sleep(0.1)
        yield connection, {"AMUX_HUB": connection.hub, "AMUX_TOKEN": connection.token or ""}


def bench_hub(connection: Connection, env: dict[str, str], scope_dir: Path, query: str,
              rg_argv: list[str] | None, runs: int, seconds: float,
              home: Path | None = None) -> dict[str, Any]:
    """The CLI against its floors, then the Hub's rates (module docstring). `env` is the
    explicit connection (`AMUX_HUB`, `AMUX_TOKEN`); `home` the Hub's AMUX_HOME, whose local
    default the headline rows use."""
    read, writes = _pick_documents(scope_dir)
    with HubClient(connection) as client:
        client.call("/v1/memory/search", {"query": query})  # warm the Hub's cache
    cli = amux_command()
    show = [*cli, "memory", "show", read]
    search = [*cli, "memory", "search", *query.split()]
    floor = [sys.executable, "-c", "pass"]
    default = {"AMUX_HOME": str(home)} if home is not None else None
    ways: list[tuple[str, list[str] | None, dict[str, str] | None]] = [
        ("show", show, default), ("python", floor, {}), ("search", search, default),
        ("rg", rg_argv, {}), ("show_explicit", show, env), ("search_explicit", search, env)]
    samples: dict[str, list[float]] = {name: [] for name, _, _ in ways}
    for _ in range(runs):  # interleaved, so noise hits every command alike
        for name, argv, environment in ways:
            if argv is None or environment is None:
                continue
            seconds_taken, done = _run(argv, environment)
            if done.returncode != 0:
                raise RuntimeError(f"{argv[:4]} failed: {done.stderr[-300:]!r}")
            samples[name].append(seconds_taken)
    if home is not None:
        samples["show_on_demand"] = _on_demand(cli, max(3, runs // 5))
    result: dict[str, Any] = {name: timing.summarize(values)
                              for name, values in samples.items() if values}
    result["get_per_s"] = round(_throughput(connection, seconds, read, writes, write=False))
    result["upsert_per_s"] = round(_throughput(connection, seconds, read, writes, write=True))
    result["read_document"] = read
    result["threads"] = THREADS
    result["seconds"] = seconds
    result["query"] = query
    return result


def _run(argv: list[str], env: dict[str, str]) -> tuple[float, subprocess.CompletedProcess[str]]:
    """`argv` with `env` over this process's environment without any AMUX_ variable (a
    user's own connection must not decide what is measured)."""
    started = time.perf_counter()
    environment = {k: v for k, v in os.environ.items() if not k.startswith("AMUX_")}
    done = subprocess.run(argv, capture_output=True, text=True, env={**environment, **env},
                          check=False)
    return time.perf_counter() - started, done


def _on_demand(cli: list[str], runs: int) -> list[float]:
    """`amux memory show` in a fresh home with no Hub: the call starts the Hub, which is
    stopped after each run (memory is off there: the answer is `memory_disabled`)."""
    import tempfile

    seconds = []
    for _ in range(runs):
        with tempfile.TemporaryDirectory(prefix="amux-bench-ondemand-") as fresh:
            env = {"AMUX_HOME": fresh}
            try:
                taken, done = _run([*cli, "memory", "show", "a.md"], env)
                if '"memory_disabled"' not in done.stdout:
                    raise RuntimeError(f"on-demand start failed: {done.stderr[-300:]!r}")
                seconds.append(taken)
            finally:
                _run([*cli, "hub", "stop"], env)
    return seconds
