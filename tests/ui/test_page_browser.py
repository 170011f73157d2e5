"""The memory page in a real browser (Debian's Chromium, headless, driven by Playwright):
every view a person uses, against a real Hub, with writes made meanwhile by "agents"
(delegated tokens carrying an agent name and an amux session, as `amux run` mints them).
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest

from tests.hubproc import HubProcess
from tests.pageclient import PageClient

expect: Any = pytest.importorskip("playwright.sync_api").expect

NOTE = """---
name: Flaky integration tests
description: The payments suite fails when run in parallel; run it with -n 0.
metadata:
  type: feedback
---
# Flaky payments tests

Run `pytest tests/payments -n 0`.

**Why:** they share one sandbox account.
"""


def agent_token(hub: HubProcess, agent: str, session: str) -> str:
    """A token as `amux run` gives an agent: the owner's, bound, with agent and session."""
    _, listing = hub.call("/v1/admin/principals", {"action": "list"})
    owner = next(entry["principal"] for entry in listing["principals"] if entry["owner"])
    status, issued = hub.call("/v1/admin/principals", {
        "action": "delegate", "name": owner, "agent": agent, "session": session})
    assert status == 200, issued
    token: str = issued["token"]
    return token


def write(hub: HubProcess, path: str, content: str, token: str | None = None) -> str:
    """Upsert `content` at `path` whatever is there; the new revision."""
    _, current = hub.call("/v1/memory/get", {"path": path}, token=token)
    expected = current["revision"] if current["exists"] else "absent"
    status, answer = hub.call("/v1/memory/upsert", {
        "path": path, "content": content, "expected_revision": expected}, token=token)
    assert status == 200, answer
    revision: str = answer["revision"]
    return revision


def content_of(hub: HubProcess, path: str) -> str | None:
    _, current = hub.call("/v1/memory/get", {"path": path})
    return current["content"] if current["exists"] else None


def open_page(page: Any, ui: PageClient, query: str = "") -> None:
    """Open the address `amux ui` printed (its key in the fragment), then `query`."""
    page.goto(ui.url)
    expect(page.locator("#live")).to_have_class("on")
    if query:
        page.goto(f"{ui.origin}/?{query}")


def test_browse_and_read_a_document_with_its_author_and_age(
        page_hub: HubProcess, ui: PageClient, browser_page: Any) -> None:
    claude = agent_token(page_hub, "claude", "s-1111aaaa")
    write(page_hub, "projects/github.com-acme-shop/testing.md", NOTE, claude)
    write(page_hub, "MEMORY.md", "- [Flaky tests](projects/github.com-acme-shop/testing.md)"
          " — run payments serially\n")
    page = browser_page
    open_page(page, ui)
    assert "#key=" not in page.url  # the key left the address bar
    row = page.locator("li.document[data-path='projects/github.com-acme-shop/testing.md']")
    expect(row).to_contain_text("claude")
    expect(row).to_contain_text("session s-1111aa")
    row.get_by_role("link", name="testing.md").click()
    view = page.locator("article.document-view")
    expect(view.locator("h1")).to_have_text("Flaky payments tests")
    expect(view.locator("dl.front-matter")).to_contain_text("The payments suite fails")
    expect(view).to_contain_text("changed just now")
    expect(view.locator("strong")).to_contain_text("Why:")
    view.get_by_role("link", name="Raw").click()
    expect(page.locator("pre.raw")).to_contain_text("**Why:** they share one sandbox")
    # A link between documents opens in the page.
    page.locator("li.document[data-path='MEMORY.md'] a").click()
    page.locator("article.document-view a[data-doc]").click()
    expect(page.locator("article.document-view h2")).to_have_text(
        "projects/github.com-acme-shop/testing.md")
    assert page.errors == []


def test_search_shows_lines_snippets_and_path_hits(page_hub: HubProcess, ui: PageClient,
                                                   browser_page: Any) -> None:
    write(page_hub, "notes/ci.md", "one\ntwo\nthe flaky runner is arm64\n")
    write(page_hub, "flaky/index.md", "nothing here\n")
    page = browser_page
    open_page(page, ui)
    page.locator("#q").fill("flaky")
    page.locator("#q").press("Enter")
    results = page.locator("ol.results")
    expect(results).to_contain_text("notes/ci.md")
    expect(results).to_contain_text("line 3:")
    expect(results).to_contain_text("the flaky runner is arm64")
    expect(page.locator("section.search-view")).to_contain_text("document(s) scanned")
    assert page.errors == []


def test_history_diff_and_restore(page_hub: HubProcess, ui: PageClient,
                                  browser_page: Any) -> None:
    first = write(page_hub, "decisions.md", "use postgres\n")
    write(page_hub, "decisions.md", "use postgres 16\n")
    write(page_hub, "decisions.md", "use sqlite\n")
    page = browser_page
    open_page(page, ui, "view=history&path=decisions.md")
    rows = page.locator("section.timeline tbody tr")
    expect(rows).to_have_count(3)
    expect(page.locator("section.timeline")).to_contain_text("The beginning of history.")
    # Compare the oldest and the newest.
    boxes = page.get_by_label("pick")
    boxes.nth(0).check()
    boxes.nth(2).check()
    page.get_by_role("button", name="Compare the two picked").click()
    diff = page.locator("pre.diff")
    expect(diff.locator(".removed")).to_contain_text("-use postgres")
    expect(diff.locator(".added")).to_contain_text("+use sqlite")
    # Restore the first version.
    page.goto(f"{ui.origin}/?view=version&path=decisions.md&revision={first}")
    expect(page.locator("article.version-view")).to_contain_text("use postgres")
    page.get_by_role("button", name="Restore this version").click()
    expect(page.locator("article.document-view")).to_contain_text("use postgres")
    assert content_of(page_hub, "decisions.md") == "use postgres\n"
    _, log = page_hub.call("/v1/memory/log", {"path": "decisions.md"})
    assert [change["operation"] for change in log["changes"]][:1] == ["restore"]
    assert page.errors == []


def test_an_edit_that_conflicts_shows_both_sides_and_loses_neither(
        page_hub: HubProcess, ui: PageClient, browser_page: Any) -> None:
    write(page_hub, "prefs.md", "tabs\n")
    page = browser_page
    open_page(page, ui, "view=edit&path=prefs.md")
    editor = page.get_by_label("content")
    expect(editor).to_have_value("tabs\n")
    editor.fill("tabs, width 4\n")
    write(page_hub, "prefs.md", "spaces\n", agent_token(page_hub, "codex", "s-2222bbbb"))
    page.get_by_role("button", name="Save", exact=True).click()
    conflict = page.locator("div.conflict")
    expect(conflict.locator("pre.mine")).to_have_text("tabs, width 4\n")
    expect(conflict.locator("pre.theirs")).to_have_text("spaces\n")
    expect(conflict).to_contain_text("codex")
    assert content_of(page_hub, "prefs.md") == "spaces\n"  # nothing was overwritten
    expect(editor).to_have_value("tabs, width 4\n")
    conflict.get_by_role("button", name="Save mine over it").click()
    expect(page.locator("article.document-view")).to_contain_text("tabs, width 4")
    _, log = page_hub.call("/v1/memory/log", {"path": "prefs.md"})
    versions = [page_hub.call("/v1/memory/version", {"path": "prefs.md",
                                                     "revision": change["revision"]})[1]
                ["content"] for change in log["changes"]]
    assert versions == ["tabs, width 4\n", "spaces\n", "tabs\n"]  # every side kept
    assert [error for error in page.errors if "409 (Conflict)" not in error] == []


def test_create_forget_and_undo(page_hub: HubProcess, ui: PageClient,
                                browser_page: Any) -> None:
    page = browser_page
    open_page(page, ui)
    page.get_by_role("link", name="+ New document").click()
    page.get_by_label("path").fill("notes/new.md")
    page.get_by_label("content").fill("# New\nhello\n")
    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.locator("article.document-view h1")).to_have_text("New")
    page.get_by_role("button", name="Forget").click()
    dialog = page.locator("dialog#confirm")
    expect(dialog).to_contain_text("Forget notes/new.md?")
    expect(dialog).to_contain_text("History")
    dialog.get_by_role("button", name="Confirm").click()
    expect(page.locator("#notice")).to_contain_text("Forgot notes/new.md.")
    assert content_of(page_hub, "notes/new.md") is None
    # The live watch sees the page's own forget too; it is not announced over the page's
    # own notice (and its Undo).
    _, log = page_hub.call("/v1/memory/log", {"limit": 1})
    expect(page.locator("body")).to_have_attribute(
        "data-last-change", log["changes"][0]["commit"], timeout=15_000)
    expect(page.locator("#notice")).to_contain_text("Forgot notes/new.md.")
    page.locator("#notice").get_by_role("button", name="Undo").click()
    expect(page.locator("article.document-view h1")).to_have_text("New")
    assert content_of(page_hub, "notes/new.md") == "# New\nhello\n"
    assert page.errors == []


def test_the_memory_switch_is_the_hubs_setting(page_hub: HubProcess, ui: PageClient,
                                               browser_page: Any) -> None:
    page = browser_page
    open_page(page, ui, "view=health")
    expect(page.locator("p.switch-state")).to_have_text("Memory is on on this Hub.")
    expect(page.locator("section.health-view")).to_contain_text(
        "amux system config set memory.enabled")
    page.get_by_role("button", name="Turn memory off").click()
    page.locator("dialog#confirm").get_by_role("button", name="Confirm").click()
    expect(page.locator("p.switch-state")).to_have_text("Memory is off on this Hub.")
    _, value = page_hub.call("/v1/admin/config", {"action": "get", "key": "memory.enabled"})
    assert value["value"] is False
    _, refused = page_hub.call("/v1/memory/list", {})
    assert refused["error"]["code"] == "memory_disabled"
    page.get_by_role("button", name="Turn memory on").click()
    page.locator("dialog#confirm").get_by_role("button", name="Confirm").click()
    expect(page.locator("p.switch-state")).to_have_text("Memory is on on this Hub.")
    expect(page.locator("section.health-view")).to_contain_text("Memory doctor")
    assert page.errors == []


def test_a_change_by_an_agent_appears_without_a_reload(page_hub: HubProcess, ui: PageClient,
                                                       browser_page: Any) -> None:
    write(page_hub, "a.md", "first\n")
    page = browser_page
    open_page(page, ui)
    expect(page.locator("li.document")).to_have_count(1)
    page.evaluate("window.__same_page = true")
    write(page_hub, "lessons/retry.md", "retry the flaky step once\n",
          agent_token(page_hub, "gemini", "s-3333cccc"))
    expect(page.locator("li.document[data-path='lessons/retry.md']")).to_contain_text(
        "gemini", timeout=15_000)
    expect(page.locator("#notice")).to_contain_text("lessons/retry.md")
    assert page.evaluate("window.__same_page") is True  # no reload happened
    assert page.errors == []


def test_a_sessions_page_lists_what_it_changed(page_hub: HubProcess, ui: PageClient,
                                               browser_page: Any) -> None:
    token = agent_token(page_hub, "qwen", "s-4444dddd")
    write(page_hub, "one.md", "1\n", token)
    write(page_hub, "two.md", "2\n", token)
    write(page_hub, "other.md", "by someone else\n")
    page = browser_page
    open_page(page, ui, "view=history")
    page.get_by_role("link", name="s-4444dddd").first.click()
    section = page.locator("section.timeline")
    expect(section.locator("h2")).to_have_text("Session s-4444dddd")
    expect(section.locator("tbody tr")).to_have_count(2)
    expect(section).to_contain_text("2 document(s)")
    expect(section).not_to_contain_text("other.md")
    assert page.errors == []


HOSTILE = """# Notes <script>window.__pwned = 1</script>

<img src=x onerror="window.__pwned = 2">
<svg onload="window.__pwned = 3"></svg>

[click me](javascript:window.__pwned=4)
[tricky](&#106;avascript:window.__pwned=5)
![tracker](http://198.51.100.7/pixel.png)
<a href="javascript:window.__pwned=6">raw link</a>
<iframe src="http://198.51.100.7/"></iframe>
"""


def test_hostile_memory_renders_inert_everywhere(page_hub: HubProcess, ui: PageClient,
                                                 browser_page: Any) -> None:
    """Documents and paths carrying script, event handlers, `javascript:` links and
    remote images: nothing runs and nothing but this server is ever asked for."""
    path = "x/<script>window.__pwned=7<!--.md"
    status, _ = page_hub.call("/v1/memory/upsert", {"path": path, "content": HOSTILE,
                                                    "expected_revision": "absent"})
    if status != 200:  # the store refuses such a name: the document alone carries it
        path = "x/hostile.md"
    write(page_hub, path, HOSTILE)
    write(page_hub, "x/hostile.md", HOSTILE)
    page = browser_page
    asked: list[str] = []
    page.on("request", lambda request: asked.append(request.url))
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    open_page(page, ui)
    for query in (f"view=doc&path={path}", "view=doc&path=x/hostile.md",
                  "view=doc&path=x/hostile.md&raw=1", "view=history",
                  "view=history&path=x/hostile.md", "view=search&q=pwned"):
        page.goto(f"{ui.origin}/?{query}")
        expect(page.locator("main")).not_to_contain_text("Loading…")
        expect(page.locator("main")).to_contain_text(re.compile("pwned|hostile|x/"))
        assert page.locator("main script, main img, main svg, main iframe").count() == 0
    page.goto(f"{ui.origin}/?view=doc&path=x/hostile.md")
    for name in ("click me", "tricky", "raw link"):
        links = page.get_by_role("link", name=name)
        assert links.count() == 0  # rendered as text, not as a link
    tracker = page.locator("a.external", has_text="tracker")
    assert "noreferrer" in (tracker.get_attribute("rel") or "")  # a link, never a load
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert dialogs == []
    assert all(url.startswith(ui.origin) for url in asked), asked


def test_without_the_key_the_page_shows_nothing(page_hub: HubProcess, ui: PageClient,
                                                browser_page: Any) -> None:
    write(page_hub, "private.md", "the user's own note\n")
    page = browser_page
    page.goto(f"{ui.origin}/?view=doc&path=private.md")
    expect(page.locator("main")).to_contain_text("unauthenticated")
    expect(page.locator("main")).not_to_contain_text("the user's own note")


def test_erasing_history_names_exactly_what_goes(page_hub: HubProcess, ui: PageClient,
                                                 browser_page: Any) -> None:
    """The owner erases one past version (a secret typed by mistake), then every past
    version; each confirmation names exactly what is erased, and the current stays."""
    leaked = write(page_hub, "ops.md", "token: hunter2-typed-by-hand\n")
    write(page_hub, "ops.md", "token: in the vault\n")
    current = write(page_hub, "ops.md", "tokens live in the vault\n")
    page = browser_page
    open_page(page, ui, f"view=version&path=ops.md&revision={leaked}")
    page.get_by_role("button", name="Erase this version…").click()
    dialog = page.locator("dialog#confirm")
    expect(dialog).to_contain_text(f"Erase version {leaked[:12]} of ops.md from history? "
                                   "Only this version is erased")
    dialog.get_by_role("button", name="Confirm").click()
    expect(page.locator("section.timeline tbody tr")).to_have_count(2)
    _, log = page_hub.call("/v1/memory/log", {"path": "ops.md"})
    assert leaked not in [change["revision"] for change in log["changes"]]
    page.get_by_role("button", name="Erase past versions…").click()
    expect(dialog).to_contain_text(f"every version of ops.md except its current content "
                                   f"(revision {current[:12]})")
    dialog.get_by_role("button", name="Confirm").click()
    expect(page.locator("#notice")).to_contain_text("Erased 1 past version(s) of ops.md.")
    _, log = page_hub.call("/v1/memory/log", {"path": "ops.md"})
    assert [change["revision"] for change in log["changes"]] == [current]
    assert content_of(page_hub, "ops.md") == "tokens live in the vault\n"
    assert page.errors == []


def _synced_conflict(hub: HubProcess, other_home: Path) -> tuple[str, HubProcess]:
    """A real sync through a bare repository with a second Hub (another machine), both
    having changed the same line of prefs.md: this Hub keeps its text and the other's
    copy beside it. The copy's path, and the other Hub (the caller stops it)."""
    bare = other_home / "shared.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True, timeout=30)
    other = HubProcess(other_home / "home")
    for side in (hub, other):
        side.call("/v1/admin/config", {"action": "set", "key": "memory.enabled",
                                       "value": "true"})
        status, added = side.call("/v1/memory/remotes", {"action": "add", "name": "origin",
                                                         "url": str(bare)})
        assert status == 200, added
    write(hub, "MEMORY.md", "- [Preferences](prefs.md) — indentation\n")
    write(hub, "prefs.md", "indent with tabs\n")
    for side in (hub, other, hub):
        assert side.call("/v1/memory/sync", {})[0] == 200
    write(other, "prefs.md", "indent with 2 spaces\n")
    write(hub, "prefs.md", "indent with 4 spaces\n")
    assert other.call("/v1/memory/sync", {})[0] == 200
    status, report = hub.call("/v1/memory/sync", {})
    assert status == 200, report
    (conflict,) = report["conflicts"]
    assert conflict["of"] == "prefs.md"
    return str(conflict["path"]), other


@pytest.mark.parametrize("choice", ["Use this text", "Keep prefs.md"])
def test_a_sync_conflict_is_marked_and_either_side_kept(
        page_hub: HubProcess, ui: PageClient, browser_page: Any, choice: str) -> None:
    with tempfile.TemporaryDirectory(prefix="amux-ui-sync-", dir="/tmp") as directory:
        copy, other = _synced_conflict(page_hub, Path(directory))
        try:
            page = browser_page
            open_page(page, ui)
            row = page.locator(f"li.document[data-path='{copy}']")
            expect(row.locator(".conflict-mark")).to_have_text("sync conflict of prefs.md")
            expect(page.locator("li.document[data-path='prefs.md'] .conflict-mark")
                   ).to_have_text("sync conflict: keep one")
            page.locator("li.document[data-path='prefs.md'] a").click()
            view = page.locator("article.document-view")
            expect(view.locator("p.conflict")).to_contain_text("A sync kept the other side")
            view.locator("p.conflict a").click()
            box = page.locator("div.sync-conflict")
            expect(box).to_contain_text("both sides changed the same lines")
            expect(box.locator("pre.kept")).to_have_text("indent with 4 spaces\n")
            expect(box.locator("pre.copy")).to_have_text("indent with 2 spaces\n")
            box.get_by_role("button", name=choice).click()
            page.locator("dialog#confirm").get_by_role("button", name="Confirm").click()
            expect(page.locator("#notice")).to_contain_text("Resolved: prefs.md kept")
            expect(page.locator("article.document-view h2")).to_have_text("prefs.md")
            kept = "indent with 2 spaces\n" if choice == "Use this text" \
                else "indent with 4 spaces\n"
            assert content_of(page_hub, "prefs.md") == kept
            assert content_of(page_hub, copy) is None
            expect(page.locator(".conflict-mark")).to_have_count(0)
            _, doctor = page_hub.call("/v1/memory/doctor", {})
            assert [f for f in doctor["findings"] if f["category"] == "sync_conflict"] == []
            _, log = page_hub.call("/v1/memory/log", {"path": "prefs.md"})
            texts = {page_hub.call("/v1/memory/version", {
                "path": "prefs.md", "revision": change["revision"]})[1]["content"]
                for change in log["changes"] if change["operation"] != "forget"}
            assert {"indent with 4 spaces\n", "indent with 2 spaces\n"} <= texts  # both kept
            page.goto(f"{ui.origin}/?view=history")  # the copy came by sync, and says so
            expect(page.locator(f"tr[data-operation='create']:has-text('{copy}')")
                   ).to_contain_text("(sync origin)")
            assert page.errors == []
        finally:
            other.stop()
