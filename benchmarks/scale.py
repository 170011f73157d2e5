"""The Hub at team scale (issue 25): hundreds of agent sessions on one Hub.

    python -m benchmarks.scale [--sessions 50,200,400] [--seconds 60] [--raw 1000]
                               [--json FILE]

A real Hub on a temp AMUX_HOME, memory on, 300 documents of the benchmark corpus.

- **Sessions.** For each N: N real `amux memory mcp` processes (the installed amux on
  its local default connection, as an agent launches it), each calling `memory_search`
  (two of the corpus's words) or `memory_get` (a document), picked at random, after an
  agent's think time (uniform 1–2 s) for `--seconds`. Reported: calls and errors by
  code, p50/p95/p99 per tool, MCP servers that warned "not available" at start, the
  Hub's CPU (% of one core) and peak RSS, its search process's (`amux.hub.searcher`),
  the two together (RSS, which counts their shared pages twice, and PSS, which shares
  them out), calls made once every session had started, and `amux hub status` (the
  owner, a new process) run every few seconds meanwhile.
- **Raw clients.** `--raw` keep-alive HTTP connections on the Hub's socket, each
  sending a `get` every 1–2 s: how many were served, answers by status.
- **TLS** (when `openssl` makes a certificate): the raw clients over the TLS listener.
- **At the cap.** The same home restarted under `prlimit --nofile=--cap-nofile`, so a
  listener fills before the Hub's 30 s idle close: the owner's socket, then the TLS
  listener, filled to the cap `hub status` says with authenticated keep-alive
  connections, idle after one `get` each, as sessions hold them: what one more client
  reads, and `amux hub status` while the listener is full.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import resource
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil

from amux.client.connection import Connection
from amux.client.transport import HubClient
from benchmarks import timing
from benchmarks.corpus import generate, iter_documents
from benchmarks.hub_bench import amux_command, hub_process

DOCUMENTS = 300
_INITIALIZE = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {},
    "clientInfo": {"name": "amux-scale-benchmark", "version": "1"}}}
_INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def _line(message: dict[str, Any]) -> bytes:
    return json.dumps(message).encode() + b"\n"


class _Sample:
    """What the sessions saw, shared by their tasks (one event loop: no lock)."""

    def __init__(self, sessions: int) -> None:
        self.sessions = sessions
        self.latency: dict[str, list[float]] = {"memory_search": [], "memory_get": []}
        self.steady: dict[str, list[float]] = {"memory_search": [], "memory_get": []}
        """The calls made once every session had started (no start-ups beside them)."""
        self.errors: Counter[str] = Counter()
        self.unavailable = 0
        self.started = 0
        self.client_cpu = 0.0
        """CPU seconds the MCP server processes used (they share the machine's cores)."""


async def _session(argv: list[str], env: dict[str, str], paths: list[str],
                   words: list[str], until: float, sample: _Sample,
                   starts: asyncio.Semaphore) -> None:
    """One `amux memory mcp` process driven as an agent's MCP client drives it."""
    async with starts:  # python start-ups take CPU: a few at a time
        process = await asyncio.create_subprocess_exec(
            *argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env=env, limit=1 << 22)
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write(_line(_INITIALIZE))
        await process.stdout.readline()
        process.stdin.write(_line(_INITIALIZED))
    sample.started += 1
    rng = random.Random()
    number = 1
    try:
        while True:
            await asyncio.sleep(rng.uniform(1.0, 2.0))
            if time.monotonic() >= until:
                break
            tool = rng.choice(("memory_search", "memory_get"))
            arguments = ({"query": " ".join(rng.sample(words, 2))} if tool == "memory_search"
                         else {"path": rng.choice(paths)})
            process.stdin.write(_line({"jsonrpc": "2.0", "id": number, "method": "tools/call",
                                       "params": {"name": tool, "arguments": arguments}}))
            number += 1
            started = time.perf_counter()
            answer = json.loads(await process.stdout.readline())
            took = time.perf_counter() - started
            sample.latency[tool].append(took)
            if sample.started == sample.sessions:
                sample.steady[tool].append(took)
            result = answer.get("result", {})
            if "error" in answer:
                sample.errors["jsonrpc"] += 1
            elif result.get("isError"):
                text = result["content"][0]["text"]
                try:
                    sample.errors[json.loads(text)["error"]["code"]] += 1
                except (ValueError, KeyError, TypeError):
                    sample.errors["other"] += 1
    finally:
        with contextlib.suppress(psutil.Error):
            times = psutil.Process(process.pid).cpu_times()
            sample.client_cpu += times.user + times.system
        process.stdin.close()
        try:
            _, err = await asyncio.wait_for(process.communicate(), 30)
        except TimeoutError:
            process.kill()
            _, err = await process.communicate()
        if b"not available" in (err or b""):
            sample.unavailable += 1


def _children_cpu(process: psutil.Process) -> float:
    """CPU seconds of the Hub's children now running (its search process)."""
    used = 0.0
    for child in process.children():
        with contextlib.suppress(psutil.Error):
            times = child.cpu_times()
            used += times.user + times.system
    return used


class _Watch:
    """The Hub's CPU share and peak RSS (and its search process's), and `amux hub status`
    timed, while it is loaded."""

    def __init__(self, pid: int, home: Path, status_every: float) -> None:
        self.process = psutil.Process(pid)
        self.home = home
        self.status_every = status_every
        self.peak_rss = 0
        self.peak_children_rss = 0
        self.peak_together_rss = 0
        self.peak_together_pss = 0
        """Both processes at one instant: RSS counts the interpreter's shared pages twice,
        PSS shares them out (what the two really take together)."""
        self.status: list[float] = []
        self.status_failed = 0
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._rss, daemon=True),
                         threading.Thread(target=self._status, daemon=True)]

    def __enter__(self) -> _Watch:
        self._cpu = self.process.cpu_times()
        self._children_cpu = _children_cpu(self.process)
        self._wall = time.monotonic()
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=60)
        cpu = self.process.cpu_times()
        used = (cpu.user + cpu.system) - (self._cpu.user + self._cpu.system)
        wall = time.monotonic() - self._wall
        self.cpu_percent = round(100 * used / wall, 1)
        children = _children_cpu(self.process) - self._children_cpu
        self.children_cpu_percent = round(100 * max(0.0, children) / wall, 1)

    def _rss(self) -> None:
        while not self._stop.wait(0.25):
            with contextlib.suppress(psutil.Error):
                hub = self.process.memory_full_info()
                children = [child.memory_full_info() for child in self.process.children()]
                self.peak_rss = max(self.peak_rss, hub.rss)
                rss = sum(child.rss for child in children)
                self.peak_children_rss = max(self.peak_children_rss, rss)
                self.peak_together_rss = max(self.peak_together_rss, hub.rss + rss)
                self.peak_together_pss = max(self.peak_together_pss,
                                             hub.pss + sum(child.pss for child in children))

    def _status(self) -> None:
        while not self._stop.wait(self.status_every):
            seconds, done = _owner_status(self.home)
            self.status.append(seconds)
            self.status_failed += done.returncode != 0

    def report(self) -> dict[str, Any]:
        return {"hub_cpu_percent": self.cpu_percent,
                "hub_peak_rss_mb": round(self.peak_rss / 2**20, 1),
                "search_process_cpu_percent": self.children_cpu_percent,
                "search_process_peak_rss_mb": round(self.peak_children_rss / 2**20, 1),
                "together_peak_rss_mb": round(self.peak_together_rss / 2**20, 1),
                "together_peak_pss_mb": round(self.peak_together_pss / 2**20, 1),
                "hub_status": _summary(self.status) if self.status else None,
                "hub_status_failed": self.status_failed}


def _summary(samples: list[float]) -> dict[str, Any]:
    """p50/p95/p99 and the rest in ms, without the raw samples (thousands of calls)."""
    summary = timing.summarize(samples)
    summary.pop("samples_ms", None)
    if samples:
        summary["p95_ms"] = round(timing.percentile(samples, 0.95) * 1000, 1)
    return summary


def _owner_status(home: Path) -> tuple[float, subprocess.CompletedProcess[bytes]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AMUX_")}
    env["AMUX_HOME"] = str(home)
    started = time.perf_counter()
    done = subprocess.run([*amux_command(), "hub", "status"], env=env, capture_output=True,
                          timeout=120, check=False)
    return time.perf_counter() - started, done


def bench_sessions(home: Path, pid: int, sessions: int, seconds: float, paths: list[str],
                   words: list[str]) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AMUX_")}
    env["AMUX_HOME"] = str(home)  # the local default connection of that home
    argv = [*amux_command(), "memory", "mcp"]
    sample = _Sample(sessions)

    async def run() -> None:
        starts = asyncio.Semaphore(8)
        started = time.monotonic()
        # every session runs `seconds` from when the last one is likely up
        until = started + seconds + sessions * 0.08
        await asyncio.gather(*(_session(argv, env, paths, words, until, sample, starts)
                               for _ in range(sessions)))

    driver = resource.getrusage(resource.RUSAGE_SELF)
    wall = time.monotonic()
    with _Watch(pid, home, status_every=5.0) as watch:
        asyncio.run(run())
    wall = time.monotonic() - wall
    used = resource.getrusage(resource.RUSAGE_SELF)
    driver_cpu = used.ru_utime + used.ru_stime - driver.ru_utime - driver.ru_stime
    calls = sum(len(values) for values in sample.latency.values())
    return {"sessions": sessions, "started": sample.started, "calls": calls,
            "errors": dict(sample.errors), "error_share": round(
                sum(sample.errors.values()) / max(1, calls), 4),
            "unavailable_at_start": sample.unavailable,
            "mcp_servers_cpu_percent": round(100 * sample.client_cpu / wall, 1),
            "driver_cpu_percent": round(100 * driver_cpu / wall, 1),
            **{tool: _summary(values) for tool, values in sample.latency.items() if values},
            **{f"{tool}_steady": _summary(values) for tool, values in sample.steady.items()
               if values},
            **watch.report()}


def _get_request(path: str, token: str, host: str = "amux-hub") -> bytes:
    body = json.dumps({"path": path}).encode()
    return (f"POST /v1/memory/get HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json"
            f"\r\nAuthorization: Bearer {token}\r\nContent-Length: {len(body)}\r\n\r\n"
            ).encode() + body


async def _read_answer(reader: asyncio.StreamReader) -> int:
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    length = next(int(line.split(":", 1)[1]) for line in lines
                  if line.lower().startswith("content-length:"))
    await reader.readexactly(length)
    return int(lines[0].split(" ")[1])


async def _raw_client(open_connection: Any, request: bytes, until: float,
                      statuses: Counter[str]) -> bool:
    """One keep-alive connection sending a `get` every 1–2 s; whether all were served."""
    rng = random.Random()
    try:
        reader, writer = await open_connection()
    except OSError as error:
        statuses[f"connect: {type(error).__name__}"] += 1
        return False
    served = True
    try:
        await asyncio.sleep(rng.uniform(0, 1.5))
        while time.monotonic() < until:
            writer.write(request)
            try:
                status = await asyncio.wait_for(_read_answer(reader), 30)
            except (OSError, asyncio.IncompleteReadError, TimeoutError) as error:
                statuses[type(error).__name__] += 1
                return False
            statuses[str(status)] += 1
            served = served and status == 200
            await asyncio.sleep(rng.uniform(1.0, 2.0))
    finally:
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()
    return served


def bench_raw(open_connection: Any, request: bytes, clients: int,
              seconds: float) -> dict[str, Any]:
    statuses: Counter[str] = Counter()

    async def run() -> list[bool]:
        until = time.monotonic() + seconds
        return await asyncio.gather(*(_raw_client(open_connection, request, until, statuses)
                                      for _ in range(clients)))

    served = asyncio.run(run())
    return {"clients": clients, "all_served": sum(served), "answers": dict(statuses)}


def bench_at_cap(home: Path, connect: Any, request: bytes, cap: int) -> dict[str, Any]:
    """Fill a listener to its `cap` with authenticated keep-alive connections, idle after
    one answered `get` (as pooled sessions hold them); then what one more client reads
    (it sends its request first, as any HTTP client does), and the owner's `amux hub
    status` while they are all held."""
    held: list[socket.socket] = []

    def answered(sock: socket.socket) -> bytes:
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
        return data

    try:
        for _ in range(cap):
            sock = connect()
            sock.settimeout(30)
            held.append(sock)
            sock.sendall(request)
            if not answered(sock).startswith(b"HTTP/1.1 200"):
                raise RuntimeError(f"connection {len(held)} of {cap} was not served")
        extra = connect()
        extra.settimeout(30)
        held.append(extra)
        try:
            extra.sendall(request)
            answer = answered(extra)
            refused = "hub_busy" if b"hub_busy" in answer else answer[:60].decode("latin-1")
        except OSError as error:
            refused = type(error).__name__
        times = []
        failed = 0
        for _ in range(5):
            seconds, done = _owner_status(home)
            times.append(seconds)
            failed += done.returncode != 0
        return {"connections_held": cap, "refused_client_read": refused,
                "hub_status": _summary(times), "hub_status_failed": failed}
    finally:
        for sock in held:
            sock.close()


def _tls(home: Path) -> tuple[Path, int] | None:
    if shutil.which("openssl") is None:
        return None
    cert, key = home / "tls.crt", home / "tls.key"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1",
                    "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    from amux.hub.config import ConfigFile

    config = ConfigFile(home)
    config.set("listeners.tls_address", f"127.0.0.1:{port}")
    config.set("listeners.tls_cert", str(cert))
    config.set("listeners.tls_key", str(key))
    return cert, port


def _corpus_home(work: Path) -> Path:
    home = work / "home"
    scope = home / "memory" / "global"
    corpus = work / "corpus"
    generate(corpus)
    scope.mkdir(parents=True)
    for number, (path, data) in enumerate(iter_documents(corpus)):
        if number >= DOCUMENTS:
            break
        (scope / path).parent.mkdir(parents=True, exist_ok=True)
        (scope / path).write_bytes(data)
    shutil.rmtree(corpus)
    return home


@contextlib.contextmanager
def _corpus_hub(home: Path, wrapper: tuple[str, ...] = ()
                ) -> Iterator[tuple[subprocess.Popen[str], Connection]]:
    with hub_process(home, wrapper) as (process, connection):
        with HubClient(connection) as client:
            while not client.call("/v1/status", {}).get("history_caught_up", True):
                time.sleep(0.1)
        yield process, connection


def _caps(connection: Connection) -> list[int]:
    """Each listener's connection cap, as `hub status` says it."""
    with HubClient(connection) as client:
        status: dict[str, Any] = client.call("/v1/status", {})
    return [int(listener["connections"]["max"]) for listener in status["listeners"]]


def _raise_nofile() -> None:
    """This driver holds a pipe trio per session and a socket per raw client."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.scale",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", default="50,200,400",
                        help="comma-separated session counts (default 50,200,400)")
    parser.add_argument("--seconds", type=float, default=60.0,
                        help="how long each load runs (default 60)")
    parser.add_argument("--raw", type=int, default=1000,
                        help="raw keep-alive clients (default 1000; 0 skips)")
    parser.add_argument("--cap-nofile", type=int, default=640,
                        help="the descriptor limit of the Hub filled to its cap "
                        "(default 640: 176 connections per listener; 0 skips)")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    _raise_nofile()
    work = Path(tempfile.mkdtemp(prefix="amux-scale-", dir="/tmp"))
    result: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": {**timing.machine_info(work), "load_average_start": timing.load_average()},
        "command": " ".join(["python -m benchmarks.scale",
                             *(argv if argv is not None else sys.argv[1:])])}
    try:
        home = _corpus_home(work)
        tls = _tls(home)
        scope = home / "memory" / "global"
        paths = sorted(str(p.relative_to(scope)) for p in scope.rglob("*.md"))
        text = " ".join((scope / p).read_text() for p in paths[:40])
        words = sorted({w for w in text.split() if w.isalpha() and len(w) > 5})[:400]
        result["documents"] = len(paths)
        with _corpus_hub(home) as (process, connection):
            result["sessions"] = []
            for count in (int(n) for n in args.sessions.split(",") if n):
                print(f"[scale] {count} MCP sessions for {args.seconds:.0f} s", flush=True)
                row = bench_sessions(home, process.pid, count, args.seconds, paths, words)
                print(f"[scale]   {json.dumps(row)}", flush=True)
                result["sessions"].append(row)
            socket_path = connection.hub.removeprefix("unix:")
            request = _get_request(paths[0], connection.token or "")
            result["cap_per_listener"] = _caps(connection)[0]
            if args.raw:
                print(f"[scale] {args.raw} raw keep-alive clients", flush=True)
                with _Watch(process.pid, home, status_every=5.0) as watch:
                    raw = bench_raw(lambda: asyncio.open_unix_connection(socket_path),
                                    request, args.raw, args.seconds)
                result["raw"] = raw | watch.report()
                print(f"[scale]   {json.dumps(result['raw'])}", flush=True)
                if tls is not None:
                    print(f"[scale] {args.raw} raw keep-alive clients over TLS", flush=True)
                    context = ssl.create_default_context(cafile=str(tls[0]))
                    with _Watch(process.pid, home, status_every=5.0) as watch:
                        raw = bench_raw(lambda: asyncio.open_connection(
                            "127.0.0.1", tls[1], ssl=context), request, args.raw,
                            args.seconds)
                    result["raw_tls"] = raw | watch.report()
                    print(f"[scale]   {json.dumps(result['raw_tls'])}", flush=True)
        if args.cap_nofile:
            # At the cap: the same home under a small descriptor limit, so a listener fills
            # within the Hub's 30 s idle close (filling 8,192 TLS connections one by one
            # takes minutes here); the mechanism is the same at any cap.
            with _corpus_hub(home, ("prlimit", f"--nofile={args.cap_nofile}")) as (
                    process, connection):
                caps = _caps(connection)
                result["capped"] = {"nofile": args.cap_nofile, "cap_per_listener": caps[0]}
                socket_path = connection.hub.removeprefix("unix:")
                request = _get_request(paths[0], connection.token or "")

                def unix() -> socket.socket:
                    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                    sock.connect(socket_path)
                    return sock

                print(f"[scale] the owner's socket at its cap ({caps[0]})", flush=True)
                result["at_cap"] = bench_at_cap(home, unix, request, caps[0])
                print(f"[scale]   {json.dumps(result['at_cap'])}", flush=True)
                if tls is not None:
                    context = ssl.create_default_context(cafile=str(tls[0]))

                    def over_tls() -> socket.socket:
                        raw_sock = socket.create_connection(("127.0.0.1", tls[1]), timeout=10)
                        return context.wrap_socket(raw_sock, server_hostname="127.0.0.1")

                    print(f"[scale] the TLS listener at its cap ({caps[-1]})", flush=True)
                    result["at_cap_tls"] = bench_at_cap(home, over_tls, request, caps[-1])
                    print(f"[scale]   {json.dumps(result['at_cap_tls'])}", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    text = json.dumps(result, indent=1)
    if args.json is not None:
        args.json.write_text(text + "\n")
    print(markdown(result))
    return 0


def markdown(result: dict[str, Any]) -> str:
    """The rows docs/benchmarks.md quotes."""
    lines = [f"Run {result['date']}, `{result['command']}`, {result.get('documents')} "
             f"documents, {result.get('cap_per_listener')} connections per listener:", "",
             "| sessions | calls | errors | get p50/p95/p99 ms | search p50/p95/p99 ms "
             "| Hub CPU | Hub peak RSS | search process CPU / RSS | both: peak RSS / PSS "
             "| `hub status` p50/max | MCP servers + driver CPU |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]

    def tool(row: dict[str, Any], name: str) -> str:
        values = row.get(name)
        if not values:
            return "–"
        return f"{values['p50_ms']:.1f} / {values['p95_ms']:.1f} / {values['p99_ms']:.1f}"

    def status(row: dict[str, Any]) -> str:
        values = row.get("hub_status")
        if not values:
            return "–"
        failed = f", {row['hub_status_failed']} failed" if row.get("hub_status_failed") else ""
        return f"{values['p50_ms']:.0f} / {values['max_ms']:.0f} ms{failed}"

    def both(row: dict[str, Any]) -> str:
        return f"{row['together_peak_rss_mb']} / {row['together_peak_pss_mb']} MB"

    for row in result.get("sessions", []):
        errors = ", ".join(f"{code} {n}" for code, n in row["errors"].items()) or "0"
        lines.append(f"| {row['sessions']} | {row['calls']:,} | {errors} | "
                     f"{tool(row, 'memory_get')} | {tool(row, 'memory_search')} | "
                     f"{row['hub_cpu_percent']}% | {row['hub_peak_rss_mb']} MB | "
                     f"{row['search_process_cpu_percent']}% / "
                     f"{row['search_process_peak_rss_mb']} MB | {both(row)} | "
                     f"{status(row)} | {row.get('mcp_servers_cpu_percent', '–')}% + "
                     f"{row.get('driver_cpu_percent', '–')}% |")
    for row in result.get("sessions", []):
        if row.get("memory_get_steady"):
            lines.append(f"\nOnce all {row['sessions']} sessions had started (no start-ups "
                         f"beside the calls): get {tool(row, 'memory_get_steady')} ms, "
                         f"search {tool(row, 'memory_search_steady')} ms (p50/p95/p99).")
    for key, label in (("raw", "raw keep-alive clients"), ("raw_tls", "raw clients over TLS")):
        raw = result.get(key)
        if raw:
            lines.append(f"\n{label}: {raw['all_served']:,} of {raw['clients']:,} had every "
                         f"request answered 200 ({raw['answers']}); Hub CPU "
                         f"{raw['hub_cpu_percent']}%, peak RSS {raw['hub_peak_rss_mb']} MB "
                         f"(with the search process {both(raw)}, RSS / PSS), "
                         f"`hub status` {status(raw)}.")
    for key, label in (("at_cap", "owner's socket"), ("at_cap_tls", "TLS listener")):
        cap = result.get(key)
        if cap:
            lines.append(f"\nAt the cap ({label}, the Hub under `prlimit --nofile="
                         f"{result['capped']['nofile']}`): {cap['connections_held']:,} "
                         "authenticated keep-alive connections held, one more client read "
                         f"{cap['refused_client_read']!r}; `amux hub status` meanwhile "
                         f"{status(cap)}.")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
