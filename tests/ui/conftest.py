"""The memory page's fixtures: a real Hub with memory on, `amux ui` started against it as
the README's user would (the installed command, the local default Hub), and Debian's
Chromium driven headless by Playwright."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.hubproc import HubProcess, amux
from tests.pageclient import PageClient

CHROMIUM = "/usr/bin/chromium"
"""Debian's package (`apt-get install chromium`): Playwright drives it, downloads nothing."""
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync"]
"""Root in CI needs --no-sandbox; the rest keeps Chromium off this closed network."""


@pytest.fixture
def page_hub(short_home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[HubProcess]:
    """The user's local default Hub (AMUX_HOME), memory on."""
    monkeypatch.setenv("AMUX_HOME", str(short_home))
    process = HubProcess(short_home)
    process.call("/v1/admin/config", {"action": "set", "key": "memory.enabled",
                                      "value": "true"})
    yield process
    process.stop()


@pytest.fixture
def ui(page_hub: HubProcess) -> Iterator[PageClient]:
    """`amux ui --no-open --json`, stopped afterwards."""
    code, started, err = amux(page_hub.home, "ui", "--no-open", "--json")
    assert code == 0, err
    try:
        yield PageClient(started)
    finally:
        amux(page_hub.home, "ui", "stop")


@pytest.fixture(scope="session")
def chromium() -> Iterator[Any]:
    """One headless Chromium per worker; a test gets a fresh context (no shared storage)."""
    if not os.access(CHROMIUM, os.X_OK) or shutil.which("chromium") is None:
        if os.environ.get("CI") == "true":
            pytest.fail("Chromium is missing: apt-get install chromium (the README's test "
                        "command installs it)")
        pytest.skip("Chromium is not installed (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True,
                                             args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def browser_page(chromium: Any) -> Iterator[Any]:
    """A fresh browser context and tab; JavaScript errors and console errors are kept
    on `page.errors`, and a test fails if the page ever shows an alert."""
    context = chromium.new_context(viewport={"width": 1280, "height": 860})
    page = context.new_page()
    page.set_default_timeout(10_000)
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("console", lambda message: errors.append(message.text)
            if message.type == "error" else None)
    page.errors = errors
    try:
        yield page
    finally:
        context.close()
