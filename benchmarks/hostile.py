"""`python -m benchmarks.hostile`: the Hub under attack and faults, measured (issue 11).

Not timings but figures a threat model quotes, from real Hub processes:

- **SIGKILL rounds**: 4 writers make conditional upserts while the Hub is killed at
  a random moment; after a restart every acknowledged write must be on disk (or
  the one in flight after it) and no temp file left. Counts rounds, acknowledged
  writes and losses.
- **CAS exactness**: 8 clients each add 100 to one counter by read, increment,
  conditional upsert, re-reading on `revision_conflict`; the counter must end at 800.
- **Unauthenticated connections**: 500 connections on the 0666 shared socket each
  announce a 1 MiB body, send 64 KiB of it and stall (and 200 stalled TLS
  handshakes when `openssl` is on PATH); the Hub's RSS before and during, and
  whether a normal `get` still answers.

docs/security.md records a run. `--rounds N` (default 100) sets the SIGKILL rounds.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import psutil

from amux.client.connection import Connection
from amux.client.transport import HubClient
from amux.errors import AmuxError
from amux.hub.config import ConfigFile
from benchmarks.hub_bench import hub_process

RESULTS = Path(__file__).resolve().parent / "results" / "hostile.json"


def sigkill_rounds(home: Path, rounds: int) -> dict[str, Any]:
    """Kill the Hub mid-write `rounds` times; count what was acknowledged and lost."""
    acknowledged = checked = losses = leftovers = 0
    scope = home / "memory" / "global"
    for number in range(rounds):
        acked: dict[str, str] = {}
        in_flight: dict[str, str] = {}
        counts = [0] * 4
        with hub_process(home) as (process, connection):
            stop = threading.Event()

            def writer(index: int, connection: Connection = connection,
                       stop: threading.Event = stop, acked: dict[str, str] = acked,
                       in_flight: dict[str, str] = in_flight, number: int = number,
                       counts: list[int] = counts) -> None:
                path = f"w/{index}.md"
                with HubClient(connection) as client:
                    try:
                        revision = client.call("/v1/memory/get", {"path": path})["revision"]
                        sequence = 0
                        while not stop.is_set():
                            sequence += 1
                            content = f"round {number} seq {sequence}\n" * (1 + sequence % 40)
                            in_flight[path] = content
                            revision = client.call("/v1/memory/upsert", {
                                "path": path, "content": content,
                                "expected_revision": revision})["revision"]
                            acked[path] = content
                            counts[index] += 1
                    except AmuxError:
                        return  # the Hub died: this write's outcome is unknown

            threads = [threading.Thread(target=writer, args=(i,)) for i in range(4)]
            for thread in threads:
                thread.start()
            time.sleep(random.uniform(0.2, 1.0))
            process.send_signal(signal.SIGKILL)
            process.wait(timeout=10)
            stop.set()
            for thread in threads:
                thread.join(timeout=30)
        acknowledged += sum(counts)
        checked += len(acked)  # each writer's last acknowledged write must be on disk
        with hub_process(home):  # a restart takes the root and removes stale temps
            leftovers += len(list(scope.rglob(".amux-tmp-*")))
            for path, content in acked.items():
                on_disk = (scope / path).read_text()
                if on_disk not in (content, in_flight[path]):
                    losses += 1
    return {"rounds": rounds, "acknowledged": acknowledged, "last_acknowledged_checked": checked,
            "lost": losses,
            "temp_files_after_restart": leftovers}


def cas_exactness(home: Path, clients: int = 8, increments: int = 100) -> dict[str, Any]:
    """`clients` x `increments` conditional increments of one counter."""
    with hub_process(home) as (_process, connection):
        path = "counter.md"
        with HubClient(connection) as client:
            current = client.call("/v1/memory/get", {"path": path})
            client.call("/v1/memory/upsert", {"path": path, "content": "0",
                                              "expected_revision": current["revision"]})
        conflicts = [0] * clients

        def add(index: int) -> None:
            with HubClient(connection) as client:
                done = 0
                while done < increments:
                    page = client.call("/v1/memory/get", {"path": path})
                    try:
                        client.call("/v1/memory/upsert", {
                            "path": path, "content": str(int(page["content"]) + 1),
                            "expected_revision": page["revision"]})
                        done += 1
                    except AmuxError as error:
                        if error.code != "revision_conflict":
                            raise
                        conflicts[index] += 1

        threads = [threading.Thread(target=add, args=(i,)) for i in range(clients)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        with HubClient(connection) as client:
            final = int(client.call("/v1/memory/get", {"path": path})["content"])
    return {"clients": clients, "increments_each": increments, "expected": clients * increments,
            "final": final, "conflicts_retried": sum(conflicts)}


def _stall_unix(path: str, count: int) -> list[socket.socket]:
    head = (b"POST /v1/memory/upsert HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: 1048576\r\n\r\n")
    held = []
    for _ in range(count):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(path)  # blocking: a full backlog waits instead of failing at once
            sock.settimeout(5)
            sock.sendall(head)
            sock.setblocking(False)
            with contextlib.suppress(OSError):
                sock.send(b"x" * 65536)
        except OSError:
            sock.close()
            continue
        held.append(sock)
    return held


def _stall_tls(port: int, count: int) -> list[socket.socket]:
    """Connections that send a TLS ClientHello's first bytes and then stall."""
    held = []
    for _ in range(count):
        try:
            sock = socket.create_connection(("127.0.0.1", port), timeout=5)
            sock.sendall(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03")
        except OSError:
            continue
        held.append(sock)
    return held


def _get_works(connection: Connection) -> bool:
    try:
        with HubClient(connection, timeout=10) as client:
            client.call("/v1/memory/get", {"path": "MEMORY.md"})
    except AmuxError:
        return False
    return True


def _held(hub: psutil.Process, connection: Connection, kind: str, attempted: int,
          held: list[socket.socket]) -> dict[str, Any]:
    """The Hub's RSS and a `get` while `held` stalls, then the connections closed."""
    time.sleep(1.0)
    try:
        return {f"{kind}_attempted": attempted, f"{kind}_connections": len(held),
                f"rss_{kind}_mb": hub.memory_info().rss / 2**20,
                f"get_answers_{kind}": _get_works(connection)}
    finally:
        for sock in held:
            sock.close()


def unauthenticated_connections(home: Path, unix: int = 500, tls: int = 200) -> dict[str, Any]:
    """RSS of a Hub holding stalled unauthenticated connections on its shared socket/TLS."""
    shared = home / "shared" / "hub.sock"
    config = ConfigFile(home)
    config.set("listeners.shared_socket", str(shared))
    tls_port = _tls_config(home, config)
    result: dict[str, Any] = {}
    with hub_process(home) as (process, connection):
        hub = psutil.Process(process.pid)
        time.sleep(0.5)
        result["rss_idle_mb"] = hub.memory_info().rss / 2**20
        result.update(_held(hub, connection, "unix", unix, _stall_unix(str(shared), unix)))
        if tls_port is not None:
            result.update(_held(hub, connection, "tls", tls, _stall_tls(tls_port, tls)))
    return result


def _tls_config(home: Path, config: ConfigFile) -> int | None:
    """A self-signed certificate and a free port for the TLS listener (needs openssl)."""
    if shutil.which("openssl") is None:
        return None
    cert, key = home / "tls.crt", home / "tls.key"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-subj", "/CN=localhost", "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    config.set("listeners.tls_address", f"127.0.0.1:{port}")
    config.set("listeners.tls_cert", str(cert))
    config.set("listeners.tls_key", str(key))
    ssl.create_default_context()  # fail here, not in the Hub, if ssl is broken
    return port


def markdown(report: dict[str, Any]) -> str:
    kill, cas, conn = report["sigkill"], report["cas"], report["connections"]
    lines = [
        f"Run {report['date']}, `{report['command']}`:", "",
        "| what | result |", "|---|---|",
        f"| SIGKILL mid-write, restart, check | {kill['rounds']} rounds, "
        f"{kill['acknowledged']:,} writes acknowledged, the last of each writer "
        f"({kill['last_acknowledged_checked']}) checked on disk, "
        f"**{kill['lost']} lost**, {kill['temp_files_after_restart']} temp files left |",
        f"| conditional increments, {cas['clients']} clients x {cas['increments_each']} | "
        f"final {cas['final']} of {cas['expected']} "
        f"({cas['conflicts_retried']} conflicts re-read and retried) |",
        f"| {conn['unix_attempted']} unauthenticated connections on the shared socket, each "
        f"announcing 1 MiB and stalling ({conn['unix_connections']} got past connect) | "
        f"RSS {conn['rss_idle_mb']:.0f} MB idle -> "
        f"{conn['rss_unix_mb']:.0f} MB; a `get` "
        f"{'answers' if conn['get_answers_unix'] else 'FAILS'} |",
    ]
    if "tls_connections" in conn:
        lines.append(f"| {conn['tls_attempted']} stalled TLS handshakes "
                     f"({conn['tls_connections']} connected) | RSS "
                     f"{conn['rss_tls_mb']:.0f} MB; a `get` "
                     f"{'answers' if conn['get_answers_tls'] else 'FAILS'} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.hostile", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=100, help="SIGKILL rounds (default 100)")
    args = parser.parse_args(argv)
    report: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d"),
        "command": "python -m benchmarks.hostile" + (
            f" --rounds {args.rounds}" if args.rounds != 100 else ""),
    }
    with tempfile.TemporaryDirectory(prefix="amux-hostile-", dir="/tmp") as scratch:
        report["sigkill"] = sigkill_rounds(Path(scratch) / "kill", args.rounds)
        report["cas"] = cas_exactness(Path(scratch) / "cas")
        report["connections"] = unauthenticated_connections(Path(scratch) / "conn")
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(report, indent=2) + "\n")
    print(markdown(report))
    ok = (report["sigkill"]["lost"] == 0 and report["cas"]["final"] == report["cas"]["expected"]
          and report["connections"]["get_answers_unix"])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
