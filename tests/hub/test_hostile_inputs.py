"""Hostile inputs through a real Hub: they get a bounded, clear answer and break nothing.

- A path may be ~500 directories deep within its 1,024 bytes. Searches used to hold
  one directory fd per level in each worker, so under `ulimit -n 1024` concurrent
  searches failed with `internal`, and so did other principals' plain `get`s.
- Error bodies echoed the offending input whole (600 KB back for a 600 KB path).
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import psutil

from tests.hubproc import Caller, HubProcess

DEEP = "a/" * 510 + "x.md"  # 1,024 bytes: the longest legal path, 510 directories deep


def test_deep_searches_under_ulimit_1024_leave_every_scope_working(short_home: Path) -> None:
    hub = HubProcess(short_home, wrapper=("prlimit", "--nofile=1024:1024"))
    try:
        for key in ("memory.enabled", "isolation.enabled"):
            hub.call("/v1/admin/config", {"action": "set", "key": key, "value": "true"})
        tokens = {name: hub.call("/v1/admin/principals", {"action": "add", "name": name})[1]
                  ["token"] for name in ("alice", "bob")}
        alice = Caller(hub.socket_path, tokens["alice"])
        bob = Caller(hub.socket_path, tokens["bob"])
        assert len(DEEP.encode()) == 1024
        status, saved = alice.call("/v1/memory/upsert", {
            "path": DEEP, "content": "deep needle\n", "expected_revision": "absent"})
        assert status == 200, saved
        status, saved = bob.call("/v1/memory/upsert", {
            "path": "notes.md", "content": "bob's note\n", "expected_revision": "absent"})
        assert status == 200, saved
        alice.close()
        bob.close()

        failures: list[object] = []
        found: list[int] = []
        fds: list[int] = []
        stop = threading.Event()
        hub_process = psutil.Process(hub.process.pid)

        def searcher() -> None:
            caller = Caller(hub.socket_path, tokens["alice"])
            try:
                while not stop.is_set():
                    status, answer = caller.call("/v1/memory/search", {"query": "needle"})
                    if status != 200:
                        failures.append(answer)
                    elif [r["path"] for r in answer["results"]] == [DEEP]:
                        found.append(1)
                    elif not answer["incomplete"]:  # past the 250 ms budget is a valid answer
                        failures.append(answer)
            finally:
                caller.close()

        def reader() -> None:
            caller = Caller(hub.socket_path, tokens["bob"])
            try:
                while not stop.is_set():
                    status, answer = caller.call("/v1/memory/get", {"path": "notes.md"})
                    if status != 200 or answer["content"] != "bob's note\n":
                        failures.append(answer)
                    fds.append(hub_process.num_fds())
            finally:
                caller.close()

        threads = [threading.Thread(target=searcher) for _ in range(8)]
        threads += [threading.Thread(target=reader) for _ in range(2)]
        for thread in threads:
            thread.start()
        time.sleep(4.0)  # the test: four seconds of searches and reads at once
        stop.set()
        for thread in threads:
            thread.join(timeout=30)
        assert failures == []
        assert found  # the 510-deep document is found (when the scan budget allows)
        assert fds and max(fds) < 200  # bounded by workers x MAX_OPEN_DIRS, not by depth
    finally:
        hub.stop()


def test_error_bodies_do_not_echo_huge_input(memory_hub: HubProcess) -> None:
    huge = "x" * 600_000 + ".md"
    for path, body in (
        ("/v1/memory/get", {"path": huge}),
        ("/v1/memory/get", {"path": "." + huge}),  # the reason quotes the segment
        ("/v1/memory/get", {"path": "a.md", "z" * 300_000: 1}),  # unknown field names
        ("/v1/memory/search", {"query": "x", "limit": "9" * 300_000}),
        ("/v1/admin/principals", {"action": "y" * 300_000, "name": "alice"}),
    ):
        status, answer = memory_hub.call(path, body)
        assert status == 400, answer
        assert len(json.dumps(answer)) < 2_500, (path, len(json.dumps(answer)))
        assert "characters" in answer["error"]["message"]
