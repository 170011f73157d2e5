"""The MCP server as an agent's MCP client uses it (issue 4's numbers).

Against the Hub serving the benchmark corpus, floors measured in the same run:

- Tool-call round trip inside one MCP session, `memory_search` (8 terms, full
  scope) and `memory_get` (first page of the largest document, 64 KiB), against
  the same request sent to the Hub's HTTP API over one persistent connection;
  interleaved call by call. Target: median ≤ 5 ms above the HTTP median.
- MCP server start to the first `tools/list` answer (initialize, initialized,
  tools/list; the start-up capability check against the Hub included), as a new
  process each time: the installed `amux memory mcp` (target ≤ 150 ms) and the
  single-file client copy that isolated runs use (`python3 -I amux-client.pyz`).

The MCP side is a minimal JSON-RPC client over pipes, so the figure is the
server's cost, not an SDK's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO, Any

from amux.client.bundle import build_client
from amux.client.connection import Connection
from amux.client.transport import HubClient
from benchmarks import timing
from benchmarks.hub_bench import amux_command

_INITIALIZE = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {},
    "clientInfo": {"name": "amux-benchmark", "version": "1"}}}
_INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


class _Session:
    """One MCP server process and the requests sent to it."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        self.process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.DEVNULL, env={**os.environ, **env})
        self._next = 1

    def ask(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        request: dict[str, Any] = {"jsonrpc": "2.0", "id": self._next, "method": method}
        if params is not None:
            request["params"] = params
        self._next += 1
        self.send(request)
        return self.receive()

    def send(self, message: dict[str, Any]) -> None:
        stdin: IO[bytes] | None = self.process.stdin
        assert stdin is not None
        stdin.write(json.dumps(message).encode() + b"\n")
        stdin.flush()

    def receive(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError("the MCP server exited")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=30)
        if self.process.stdout is not None:
            self.process.stdout.close()


def _largest_document(scope_dir: Path) -> str:
    _size, path = max((p.stat().st_size, str(p.relative_to(scope_dir)))
                     for p in scope_dir.rglob("*.md"))
    return path


def _round_trips(session: _Session, client: HubClient, calls: int,
                 operations: dict[str, tuple[str, str, dict[str, Any]]]) -> dict[str, Any]:
    samples: dict[str, list[float]] = {f"{name} {side}": [] for name in operations
                                       for side in ("mcp", "http")}
    for tool, endpoint, arguments in operations.values():  # warm both paths
        session.ask("tools/call", {"name": tool, "arguments": arguments})
        client.call(endpoint, arguments)
    for _ in range(calls):
        for name, (tool, endpoint, arguments) in operations.items():
            started = time.perf_counter()
            answer = session.ask("tools/call", {"name": tool, "arguments": arguments})
            samples[f"{name} mcp"].append(time.perf_counter() - started)
            if answer["result"]["isError"]:
                raise RuntimeError(f"{tool} failed: {answer['result']['content'][0]['text']}")
            started = time.perf_counter()
            client.call(endpoint, arguments)
            samples[f"{name} http"].append(time.perf_counter() - started)
    return {key: timing.summarize(values) for key, values in samples.items()}


def _start_to_list(argv: list[str], env: dict[str, str], runs: int) -> dict[str, Any]:
    samples = []
    for index in range(runs + 1):
        started = time.perf_counter()
        session = _Session(argv, env)
        session.send(_INITIALIZE)
        session.receive()
        session.send(_INITIALIZED)
        tools = session.ask("tools/list")
        elapsed = time.perf_counter() - started
        if len(tools["result"]["tools"]) != 5:
            raise RuntimeError(f"unexpected tools/list answer: {tools}")
        session.close()
        if index:  # the first run only warms the page cache
            samples.append(elapsed)
    return timing.summarize(samples)


def bench_mcp(connection: Connection, env: dict[str, str], scope_dir: Path, query: str,
              calls: int, starts: int) -> dict[str, Any]:
    large = _largest_document(scope_dir)
    operations = {
        "search": ("memory_search", "/v1/memory/search", {"query": query}),
        "get 64 KiB": ("memory_get", "/v1/memory/get", {"path": large}),
    }
    installed = [*amux_command(), "memory", "mcp"]
    with tempfile.TemporaryDirectory(prefix="amux-bench-client-") as directory:
        bundle = build_client(Path(directory) / "amux-client.pyz")
        single_file = [sys.executable, "-I", str(bundle), "memory", "mcp"]
        session = _Session(installed, env)
        try:
            session.send(_INITIALIZE)
            session.receive()
            session.send(_INITIALIZED)
            with HubClient(connection) as client:
                result = _round_trips(session, client, calls, operations)
        finally:
            session.close()
        result["start installed"] = _start_to_list(installed, env, starts)
        result["start single-file"] = _start_to_list(single_file, env, starts)
    result["large_document"] = large
    result["calls"] = calls
    return result
