"""The Hub's search process (`amux.hub.searcher`), with real processes: searches are
answered there, with the answers of the Hub's own search; when it is killed, fails or
cannot help (one CPU), the Hub searches itself and no caller sees an error; it ends
with the Hub, however the Hub ends."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from amux.hub import searcher
from amux.hub.searcher import SearchProcess
from amux.memory import GLOBAL, Store
from amux.memory.search import parse_query
from tests.hubproc import HubProcess
from tests.wait import wait_until

pytestmark = pytest.mark.timeout(90)

WORDS = ("alpha", "beta", "gamma", "delta", "Epsilon", "zeta", "日本語", "pytest")


def searchers(hub_pid: int) -> list[psutil.Process]:
    """The Hub's search processes now running."""
    found = []
    for child in psutil.Process(hub_pid).children():
        try:
            if "amux.hub.searcher" in child.cmdline():
                found.append(child)
        except psutil.NoSuchProcess:
            continue
    return found


def ready(hub: HubProcess) -> psutil.Process:
    """The Hub's one search process, once it said it is ready: searches go to it from then
    on (it says so once it imported what it imports)."""
    child = wait_until(lambda: len(found := searchers(hub.process.pid)) == 1 and found[0],
                       10, "one search process")
    wait_until(lambda: hub.call("/v1/status", {})[1]["search_process_pid"] == child.pid, 10,
               "the search process to say it is ready")
    return child


def write(hub: HubProcess, path: str, text: str) -> None:
    status, body = hub.call("/v1/memory/upsert", {"path": path, "content": text,
                                                  "expected_revision": "absent"})
    assert status == 200, body


def search(hub: HubProcess, query: str, **more: object) -> tuple[int, dict[str, object]]:
    status, body = hub.call("/v1/memory/search", {"query": query, **more})
    return status, body


def test_searches_are_answered_by_the_search_process(memory_hub: HubProcess) -> None:
    for i in range(20):
        write(memory_hub, f"notes/n{i:02}.md", f"# Note {i}\nalpha {i}\n" + "beta\n" * i)
    assert memory_hub.call("/v1/status", {})[1]["search_process_pid"] is None
    search(memory_hub, "alpha")  # the first search starts it, and is answered by the Hub
    child = ready(memory_hub)
    before = sum(child.cpu_times()[:2])
    for _ in range(200):
        status, body = search(memory_hub, "alpha beta")
        assert status == 200
        assert [r["path"] for r in body["results"]] == [  # type: ignore[index]
            f"notes/n{i:02}.md" for i in range(1, 6)]  # both terms, then by path
    assert sum(child.cpu_times()[:2]) - before > 0.05  # the scans ran there


def test_a_search_sees_the_write_acknowledged_before_it(memory_hub: HubProcess) -> None:
    write(memory_hub, "a.md", "first\n")
    search(memory_hub, "first")
    ready(memory_hub)
    for i in range(30):
        status, body = memory_hub.call("/v1/memory/get", {"path": "a.md"})
        revision = body["revision"]
        status, body = memory_hub.call("/v1/memory/upsert", {
            "path": "a.md", "content": f"word{i}\n", "expected_revision": revision})
        assert status == 200, body
        status, found = search(memory_hub, f"word{i}")
        assert [r["path"] for r in found["results"]] == ["a.md"], i  # type: ignore[index]


def test_a_killed_search_process_costs_no_answer(memory_hub: HubProcess) -> None:
    for i in range(10):
        write(memory_hub, f"d{i}.md", f"gamma {i}\n")
    search(memory_hub, "gamma")
    first = ready(memory_hub)
    first.send_signal(signal.SIGKILL)
    deadline = time.monotonic() + 7.0  # the Hub starts a new one 5 s after a death
    answered = 0
    while time.monotonic() < deadline:
        status, body = search(memory_hub, "gamma")
        assert status == 200, body
        assert len(body["results"]) == 5  # type: ignore[arg-type]
        answered += 1
    assert answered > 50
    wait_until(lambda: [p.pid for p in searchers(memory_hub.process.pid)]
               not in ([], [first.pid]), 10, "a new search process")


def test_a_search_failing_in_the_process_gets_the_hubs_own_error(
        memory_hub: HubProcess) -> None:
    write(memory_hub, "real/a.md", "delta\n")
    search(memory_hub, "delta")
    ready(memory_hub)
    os.symlink("real", memory_hub.home / "memory" / "global" / "link")
    status, body = search(memory_hub, "delta", path_prefix="link")
    assert status == 400
    assert body["error"]["code"] == "invalid_path"  # type: ignore[index]
    assert "symlink" in body["error"]["message"]  # type: ignore[index]
    status, body = search(memory_hub, "delta")  # and the process is still there
    assert status == 200
    assert len(searchers(memory_hub.process.pid)) == 1


@pytest.mark.parametrize("ending", [signal.SIGTERM, signal.SIGKILL])
def test_the_search_process_ends_with_the_hub(short_home: Path, ending: int) -> None:
    hub = HubProcess(short_home)
    try:
        hub.call("/v1/admin/config", {"action": "set", "key": "memory.enabled",
                                      "value": "true"})
        write(hub, "a.md", "epsilon\n")
        search(hub, "epsilon")
        child = wait_until(lambda: len(found := searchers(hub.process.pid)) == 1 and found[0],
                           10, "one search process")
        hub.process.send_signal(ending)
        hub.process.wait(timeout=20)
        wait_until(lambda: not child.is_running() or child.status() == psutil.STATUS_ZOMBIE,
                   5, "the search process to end with the Hub")
    finally:
        hub.stop()


def test_on_one_cpu_the_hub_searches_itself(short_home: Path) -> None:
    hub = HubProcess(short_home, wrapper=("taskset", "-c", "0"))
    try:
        hub.call("/v1/admin/config", {"action": "set", "key": "memory.enabled",
                                      "value": "true"})
        write(hub, "a.md", "zeta\n")
        for _ in range(20):
            status, body = search(hub, "zeta")
            assert status == 200 and len(body["results"]) == 1  # type: ignore[arg-type]
        time.sleep(0.5)  # the test: time for a search process to start, and none does
        assert searchers(hub.process.pid) == []
    finally:
        hub.stop()


def no_fallback(*args: object) -> dict[str, object]:
    raise AssertionError("searched in the Hub, not in the search process")


@pytest.fixture
def process_and_store(tmp_path: Path) -> Iterator[tuple[SearchProcess, Store]]:
    """A search process serving a store of our own: ready, with its fallback failing."""
    store = Store(tmp_path / "memory")
    scope = store.root / "global"
    scope.mkdir()
    searches = SearchProcess(store.search_here, restart_seconds=0.05)
    try:
        fd = os.open(scope, os.O_RDONLY | os.O_DIRECTORY)
        try:
            searches(fd, GLOBAL.binding, parse_query("x"), (), 1)  # starts it
        finally:
            os.close(fd)
        wait_until(lambda: searches.pid is not None, 10, "the search process to start")
        searches.fallback = no_fallback
        yield searches, store
    finally:
        searches.close()
        store.close()


documents = st.dictionaries(
    st.sampled_from([f"{folder}{name}.md" for folder in ("", "a/", "a/b/")
                     for name in ("one", "two", "alpha", "Beta")]),
    st.lists(st.sampled_from(WORDS), max_size=12).map(" ".join), max_size=8)


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(files=documents, query=st.lists(st.sampled_from(WORDS), min_size=1, max_size=3),
       prefix=st.sampled_from([(), ("a",), ("a", "b"), ("a", "one.md")]),
       limit=st.integers(1, 20))
def test_the_process_answers_what_the_hub_would(
        process_and_store: tuple[SearchProcess, Store], files: dict[str, str],
        query: list[str], prefix: tuple[str, ...], limit: int) -> None:
    searches, store = process_and_store
    scope = store.root / "global"
    for old in scope.rglob("*.md"):
        old.unlink()
    for path, text in files.items():
        store.upsert(GLOBAL, path, text + "\n", "absent")
    parsed = parse_query(" ".join(query))
    fd = os.open(scope, os.O_RDONLY | os.O_DIRECTORY)
    try:
        there = searches(fd, GLOBAL.binding, parsed, prefix, limit)
        here = store.search_here(fd, GLOBAL.binding, parsed, prefix, limit)
    finally:
        os.close(fd)
    assert there == here


def test_a_dead_process_is_replaced_and_meanwhile_the_store_searches(
        process_and_store: tuple[SearchProcess, Store]) -> None:
    searches, store = process_and_store
    store.upsert(GLOBAL, "a.md", "alpha\n", "absent")
    searches.fallback = store.search_here
    first = searches.pid
    assert first is not None
    os.kill(first, signal.SIGKILL)
    fd = os.open(store.root / "global", os.O_RDONLY | os.O_DIRECTORY)
    try:
        def answered_by_a_new_one() -> bool:
            found = searches(fd, GLOBAL.binding, parse_query("alpha"), (), 5)
            assert [r["path"] for r in found["results"]] == ["a.md"]
            return searches.pid not in (None, first)
        wait_until(answered_by_a_new_one, 10, "a new search process to answer")
    finally:
        os.close(fd)


@contextlib.contextmanager
def over_one_document(tmp_path: Path, restart_seconds: float) -> Iterator[
        tuple[SearchProcess, Callable[[], None]]]:
    """A store holding `a.md`, a search process over it, and a search that must find it
    (from the child or the store, whichever answers)."""
    store = Store(tmp_path / "memory")
    store.upsert(GLOBAL, "a.md", "alpha\n", "absent")
    searches = SearchProcess(store.search_here, restart_seconds=restart_seconds)
    fd = os.open(store.root / "global", os.O_RDONLY | os.O_DIRECTORY)

    def finds_it() -> None:
        found = searches(fd, GLOBAL.binding, parse_query("alpha"), (), 5)
        assert [r["path"] for r in found["results"]] == ["a.md"]

    try:
        yield searches, finds_it
    finally:
        os.close(fd)
        searches.close()
        store.close()


def test_a_process_that_cannot_start_is_not_started_again_and_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(sys, "executable", "/bin/false")  # exits at once, never ready
    # after a death before ready it waits 12 pauses (2.4 s), not one (0.2 s)
    with over_one_document(tmp_path, 0.2) as (_, finds_it), \
            caplog.at_level(logging.WARNING, logger="amux.hub"):
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline:  # 10 restart pauses
            finds_it()
            time.sleep(0.01)
    said = [r.getMessage() for r in caplog.records if "before it was ready" in r.getMessage()]
    assert len(said) == 1, said
    assert "exit 1" in said[0]


def fake_child(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, answer: str) -> None:
    """The search process replaced by a script that says it is ready and then, for each
    request, runs `answer` (Python, with `sock` its socket)."""
    child = tmp_path / "child.py"
    child.write_text("import socket, sys, time\n"
                     "sock = socket.socket(fileno=int(sys.argv[1]))\n"
                     "sock.send(b'ready')\n"
                     "while socket.recv_fds(sock, 1 << 16, 1)[0]:\n"
                     f"    {answer}\n")
    wrapper = tmp_path / "python"
    wrapper.write_text(f'#!/bin/sh\nexec {sys.executable} {child} "$4"\n')  # its FD
    wrapper.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(wrapper))


def test_a_process_that_answers_nonsense_is_dropped_and_nobody_waits(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    fake_child(tmp_path, monkeypatch, "sock.send(b'\\x80\\x04garbled')")  # a cut pickle
    with over_one_document(tmp_path, 30.0) as (searches, finds_it), \
            caplog.at_level(logging.WARNING, logger="amux.hub"):
        finds_it()  # starts it
        wait_until(lambda: searches.pid is not None, 10, "the search process to start")
        began = time.monotonic()
        finds_it()
        assert time.monotonic() - began < 2.0  # not the 10 s wait for an answer
        wait_until(lambda: searches.pid is None, 10,
                   "the process to be dropped (and not started again)")
        finds_it()
    assert any("the search process failed" in r.getMessage() for r in caplog.records)


def test_a_process_that_never_answers_is_killed_and_the_search_answered(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    fake_child(tmp_path, monkeypatch, "time.sleep(3600)")  # stuck in its first search
    monkeypatch.setattr(searcher, "ANSWER_SECONDS", 0.5)
    with over_one_document(tmp_path, 30.0) as (searches, finds_it), \
            caplog.at_level(logging.WARNING, logger="amux.hub"):
        finds_it()  # starts it
        wait_until(lambda: searches.pid is not None, 10, "the search process to start")
        stuck = psutil.Process(searches.pid)
        began = time.monotonic()
        finds_it()  # waits for it, then searches in the store
        assert 0.5 <= time.monotonic() - began < 5.0
        assert searches.pid is None
        # killed: a child merely told to stop would be reaped only after 2 s (`_reap`)
        wait_until(lambda: not stuck.is_running(), 1.5, "the stuck process to be killed")
    assert any("did not answer in" in r.getMessage() for r in caplog.records)
