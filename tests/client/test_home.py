"""The client's AMUX_HOME default agrees with platformdirs (SPEC §2)."""

from __future__ import annotations

from pathlib import Path

import platformdirs
import pytest

from amux.client.home import amux_home


@pytest.mark.parametrize(
    "env",
    [
        {},
        {"XDG_DATA_HOME": "/tmp/xdg-data"},
        {"XDG_DATA_HOME": "relative/ignored"},
        {"XDG_DATA_HOME": ""},
    ],
)
def test_default_matches_platformdirs(
    env: dict[str, str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("AMUX_HOME", raising=False)
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    import os

    assert amux_home(os.environ) == Path(platformdirs.user_data_dir("amux", ensure_exists=False))


def test_amux_home_overrides(monkeypatch: pytest.MonkeyPatch) -> None:
    assert amux_home({"AMUX_HOME": "/srv/amux", "XDG_DATA_HOME": "/x"}) == Path("/srv/amux")
