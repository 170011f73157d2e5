"""`amux ui` opens the desktop's browser on a private file that forwards to the page, so the
key is never on a command line (every local user can read those)."""

from __future__ import annotations

import html
import stat
from pathlib import Path

from tests.hubproc import HubProcess, amux
from tests.wait import wait_until


def test_the_browser_gets_a_private_file_never_the_key(page_hub: HubProcess,
                                                       tmp_path: Path) -> None:
    argv_file = tmp_path / "argv"
    browser = tmp_path / "browser"
    browser.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > {argv_file}\n')
    browser.chmod(0o755)
    code, started, err = amux(page_hub.home, "ui", "--json",
                              env={"DISPLAY": ":99", "BROWSER": str(browser)})
    try:
        assert code == 0, err
        assert started["opened"] is True
        argv = wait_until(lambda: argv_file.exists() and argv_file.read_text(), 10,
                          "the browser to be started")
        key = started["url"].partition("#key=")[2]
        assert key and key not in argv
        forward = Path(argv.strip().removeprefix("file://"))
        assert stat.S_IMODE(forward.stat().st_mode) == 0o600
        assert started["url"] in html.unescape(forward.read_text())
    finally:
        amux(page_hub.home, "ui", "stop")
    assert not forward.exists()  # the key goes with the page


def test_without_a_desktop_the_address_is_printed_and_nothing_opened(
        page_hub: HubProcess) -> None:
    code, text, err = amux(page_hub.home, "ui", env={"DISPLAY": "", "WAYLAND_DISPLAY": ""})
    try:
        assert code == 0, err
        assert "http://127.0.0.1:" in text and "#key=" in text
    finally:
        amux(page_hub.home, "ui", "stop")
