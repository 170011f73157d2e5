"""What the memory page costs (issue 35): its answers against the Hub's own, and in Chromium.

    python -m benchmarks.ui_bench [--documents N] [--changes N] [--runs N] [--json FILE]
                                  [--screenshots DIR]

A Hub whose global scope holds `--documents` documents and a `--changes`-change history
(made through the store with agents and sessions as authors, then the Hub started on
them), and `amux ui` started against it as a user would. Measured, each against its
floor in the same run:

- the page's answers over HTTP (`/api/list`: the first page of the scope; `/api/log`:
  the newest 100 changes, and a page 9,000 changes deep; `/api/read`), against the
  Hub's own answer to the same question (`/v1/admin/memory`), so the ratio is what the
  page adds;
- in Chromium (Debian's, headless, Playwright): from navigation to the tree drawn, and
  to a history page drawn;
- the page's weight: every byte a first visit loads.

`--screenshots DIR` also writes docs' pictures (ui-browse.png, ui-history.png,
ui-diff.png) from a
small scope of realistic notes.
"""

from __future__ import annotations

import argparse
import gzip
import http.client
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks import timing
from benchmarks.hub_bench import amux_command, hub_process

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync"]
AGENTS = ("claude", "codex", "gemini", "qwen", "opencode", "pi", "copilot")


def build(home: Path, documents: int, changes: int) -> float:
    """The scope and its history, through the store; seconds it took."""
    from amux.memory import GLOBAL, Store
    from amux.memory.history import History
    from amux.memory.versions import Author

    started = time.perf_counter()
    history = History(home / "history")
    with Store(home / "memory", exclusive=True, history=history) as store:
        revisions = {}
        for n in range(changes):
            index = n % documents
            path = f"projects/github.com-team-repo{index % 16:02d}/topic-{index:04d}.md"
            agent = AGENTS[n % len(AGENTS)]
            author = Author("bench", agent, f"s-{n // 25:06d}")
            body = (f"---\nname: topic {index}\ndescription: what was learned about topic "
                    f"{index}\n---\n# Topic {index}\n\nVersion {n}: a note of a few lines.\n")
            revisions[path] = store.upsert(GLOBAL, path, body, revisions.get(path, "absent"),
                                           author)["revision"]
        history.close()
    from amux.hub.config import ConfigFile

    ConfigFile(home).set("memory.enabled", "true")
    return time.perf_counter() - started


def showcase(home: Path) -> None:
    """A few realistic notes, written as agents would, for the screenshots."""
    from amux.memory import GLOBAL, Store
    from amux.memory.history import History
    from amux.memory.versions import Author

    notes = {
        "MEMORY.md": ("claude", "- [Testing the shop](projects/github.com-acme-shop/testing.md)"
                      " — payments tests run serially\n- [Preferences](user/preferences.md)"
                      " — tabs, short answers\n"),
        "user/preferences.md": ("codex", "---\nname: Preferences\ndescription: How the user "
                                "likes code and answers\nmetadata:\n  type: user\n---\n"
                                "- Indent with tabs in Go, 4 spaces in Python.\n"
                                "- Short answers; code first.\n"),
        "projects/github.com-acme-shop/testing.md": (
            "claude", "---\nname: Testing the shop\ndescription: The payments suite fails "
            "in parallel; run it with -n 0\nmetadata:\n  type: feedback\n---\n"
            "# Payments tests\n\nRun `pytest tests/payments -n 0`.\n\n**Why:** they share one "
            "sandbox account.\n\n**How to apply:** any change under `payments/`.\n"),
        "projects/github.com-acme-shop/deploy.md": (
            "gemini", "---\nname: Deploying\ndescription: Staging deploys need the VPN\n---\n"
            "Staging is behind the VPN since 2026-11-20.\n"),
        "projects/github.com-acme-api/decisions.md": (
            "qwen", "---\nname: Decisions\ndescription: Why Postgres 16\n---\n"
            "Chose Postgres 16 for logical replication.\n"),
    }
    history = History(home / "history")
    with Store(home / "memory", exclusive=True, history=history) as store:
        for number, (path, (agent, text)) in enumerate(notes.items()):
            store.upsert(GLOBAL, path, text, "absent",
                         Author("alice", agent, f"s-{7 + number:04d}c9e2"))
        current = store.get(GLOBAL, "projects/github.com-acme-shop/testing.md")["revision"]
        store.upsert(GLOBAL, "projects/github.com-acme-shop/testing.md",
                     notes["projects/github.com-acme-shop/testing.md"][1].replace(
                         "sandbox account.", "sandbox account (acct 4411), reset nightly."),
                     current, Author("alice", "opencode", "s-0042aa17"))
        history.close()
    from amux.hub.config import ConfigFile

    ConfigFile(home).set("memory.enabled", "true")


class Page:
    """The page's address and key, and its API over one keep-alive connection."""

    def __init__(self, started: dict[str, Any]) -> None:
        self.url = started["url"]
        self.port = started["port"]
        self.key = self.url.partition("#key=")[2]
        self.connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)

    def api(self, name: str, body: dict[str, Any]) -> tuple[Any, int]:
        data = json.dumps(body)
        self.connection.request("POST", f"/api/{name}", data, {
            "Host": f"127.0.0.1:{self.port}", "Origin": f"http://127.0.0.1:{self.port}",
            "X-Amux-Key": self.key, "Content-Type": "application/json"})
        answer = self.connection.getresponse()
        raw = answer.read()
        if answer.status != 200:
            raise RuntimeError(f"/api/{name}: {answer.status} {raw[:300]!r}")
        return json.loads(raw), len(raw)

    def weight(self) -> dict[str, int]:
        total = packed = 0
        for path in ("/", "/static/app.js", "/static/app.css", "/favicon.ico"):
            self.connection.request("GET", path, headers={"Host": f"127.0.0.1:{self.port}"})
            body = self.connection.getresponse().read()
            total += len(body)
            packed += len(gzip.compress(body))
        return {"bytes": total, "gzip_bytes": packed}


def _timed(call: Callable[[], Any], runs: int) -> dict[str, Any]:
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        call()
        samples.append(time.perf_counter() - started)
    return timing.summarize(samples)


def started_page(home: Path, env: dict[str, str]) -> dict[str, Any]:
    done = subprocess.run([*amux_command(), "ui", "--no-open", "--json"], env=env,
                          capture_output=True, text=True, check=False, timeout=60)
    if done.returncode != 0:
        raise RuntimeError(f"amux ui failed: {done.stderr}")
    started: dict[str, Any] = json.loads(done.stdout)
    return started


def bench(home: Path, documents: int, changes: int, runs: int) -> dict[str, Any]:
    from amux.client.transport import HubClient

    built = build(home, documents, changes)
    env = {key: value for key, value in os.environ.items() if not key.startswith("AMUX_")}
    env["AMUX_HOME"] = str(home)
    result: dict[str, Any] = {"documents": documents, "changes": changes,
                              "built_seconds": round(built, 1)}
    with hub_process(home) as (_process, connection):
        started = started_page(home, env)
        try:
            page = Page(started)
            hub = HubClient(connection)

            def admin(operation: str, **fields: Any) -> Any:
                return hub.call("/v1/admin/memory", {"operation": operation, **fields})

            deep = admin("log", limit=1000)["changes"][-1]["commit"]
            for _ in range(8):
                deep_page = admin("log", limit=1000, before=deep)["changes"]
                deep = deep_page[-1]["commit"] if deep_page else deep
            document = admin("list", limit=1)["documents"][0]["path"]
            rows = {
                "list: first page (1,000 of the scope)": (
                    lambda: page.api("list", {}),
                    lambda: admin("list", limit=1000)),
                "log: newest 100": (lambda: page.api("log", {}),
                                    lambda: admin("log", limit=100)),
                "log: 100, 9,000 changes deep": (
                    lambda: page.api("log", {"before": deep}),
                    lambda: admin("log", limit=100, before=deep)),
                "read: one document": (lambda: page.api("read", {"path": document}),
                                       lambda: admin("get", path=document)),
            }
            measured = {}
            for name, (through_page, floor) in rows.items():
                through_page()
                floor()
                measured[name] = {"page": _timed(through_page, runs),
                                  "hub (floor)": _timed(floor, runs),
                                  "answer_bytes": through_page()[1]}
                measured[name]["ratio"] = round(measured[name]["page"]["p50_ms"]
                                                / measured[name]["hub (floor)"]["p50_ms"], 2)
            result["answers"] = measured
            result["weight"] = page.weight()
            result["browser"] = _browser(started, runs)
            hub.close()
        finally:
            subprocess.run([*amux_command(), "ui", "stop"], env=env, capture_output=True,
                           check=False, timeout=60)
    return result


def _browser(started: dict[str, Any], runs: int) -> dict[str, Any]:
    """Navigation to drawn, in Chromium: the tree of the scope, a history page."""
    from playwright.sync_api import sync_playwright

    origin = started["url"].partition("/#")[0]
    out = {}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True,
                                             args=CHROMIUM_ARGS)
        tab = browser.new_page()
        tab.goto(started["url"])
        tab.wait_for_selector("body[data-drawn-ms]", state="attached")
        for name, query in (("browse: tree of the scope", "view=browse"),
                            ("history: newest 100", "view=history")):
            in_page = []

            def visit(query: str = query, in_page: list[float] = in_page) -> None:
                tab.goto(f"{origin}/?{query}")
                tab.wait_for_selector("body[data-drawn-ms]", state="attached",
                                      timeout=30_000)
                in_page.append(float(tab.evaluate("document.body.dataset.drawnMs")) / 1000)
            visit()
            in_page.clear()
            out[f"{name}, drawn (navigation start to drawn, in the page)"] = {}
            out[f"{name}, drawn (as Playwright waits)"] = _timed(visit, runs)
            out[f"{name}, drawn (navigation start to drawn, in the page)"] = \
                timing.summarize(in_page)
        def shell() -> None:  # the floor: the browser fetching a static file of the page
            tab.goto(f"{origin}/static/app.css")
        shell()
        out["floor: a static file of the page, as Playwright waits"] = _timed(shell, runs)
        browser.close()
    return out


def screenshots(work: Path, directory: Path) -> None:
    from playwright.sync_api import sync_playwright

    home = work / "showcase"
    showcase(home)
    env = {key: value for key, value in os.environ.items() if not key.startswith("AMUX_")}
    env["AMUX_HOME"] = str(home)
    with hub_process(home):
        started = started_page(home, env)
        origin = started["url"].partition("/#")[0]
        try:
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True,
                                                     args=CHROMIUM_ARGS)
                tab = browser.new_page(viewport={"width": 1200, "height": 680})
                tab.goto(started["url"])
                tab.goto(f"{origin}/?view=doc&path=projects/github.com-acme-shop/testing.md")
                tab.wait_for_selector("article.document-view h1")
                tab.screenshot(path=str(directory / "ui-browse.png"))
                tab.goto(f"{origin}/?view=history")
                tab.wait_for_selector("section.timeline tbody tr")
                tab.screenshot(path=str(directory / "ui-history.png"))
                tab.goto(f"{origin}/?view=history&path=projects/github.com-acme-shop/testing.md")
                tab.wait_for_selector("section.timeline tbody tr")
                tab.get_by_role("link", name="diff").first.click()
                tab.wait_for_selector("pre.diff")
                tab.screenshot(path=str(directory / "ui-diff.png"))
                browser.close()
        finally:
            subprocess.run([*amux_command(), "ui", "stop"], env=env, capture_output=True,
                           check=False, timeout=60)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.ui_bench",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--documents", type=int, default=1024)
    parser.add_argument("--changes", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--screenshots", type=Path, default=None,
                        help="write ui-browse.png, ui-history.png and ui-diff.png here")
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="amux-ui-bench-", dir="/tmp"))
    try:
        if args.screenshots is not None:
            screenshots(work, args.screenshots)
        result = {"machine": {**timing.machine_info(work),
                              "load_average_start": timing.load_average()},
                  **bench(work / "home", args.documents, args.changes, args.runs),
                  "command": " ".join(["python -m benchmarks.ui_bench",
                                       *(argv if argv is not None else sys.argv[1:])])}
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if args.json is not None:
        args.json.write_text(json.dumps(result, indent=1) + "\n")
    print(f"{result['documents']} documents, {result['changes']} changes "
          f"(built in {result['built_seconds']} s)")
    for name, row in result["answers"].items():
        print(f"{name:40s} page p50 {row['page']['p50_ms']:6.1f} ms p90 "
              f"{row['page']['p90_ms']:6.1f}  hub p50 {row['hub (floor)']['p50_ms']:6.1f} ms  "
              f"x{row['ratio']}  ({row['answer_bytes']:,} bytes)")
    for name, row in result["browser"].items():
        print(f"{name:40s} p50 {row['p50_ms']:6.1f} ms p90 {row['p90_ms']:6.1f} ms")
    weight = result["weight"]
    print(f"page weight: {weight['bytes']:,} bytes ({weight['gzip_bytes']:,} gzipped)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
