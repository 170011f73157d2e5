"""Wiring details that need no Hub."""

from __future__ import annotations

from pathlib import Path

import pytest


def test_a_missing_installed_client_is_an_explicit_failure(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from amux.client.wire import ClientError
    from amux.launcher.wiring import installed_client

    monkeypatch.setattr(sys, "executable", str(tmp_path / "bin" / "python3"))
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ClientError, match="the amux client is not installed"):
        installed_client()
