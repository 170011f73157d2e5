"""Finding the Hub: AMUX_MEMORY_CONFIG, then AMUX_HUB + AMUX_TOKEN, then the local default."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from amux.client.connection import find_connection
from amux.errors import AmuxError


def _config(path: Path, mode: int = 0o600, **fields: object) -> Path:
    path.write_text(json.dumps({"version": 1, "hub": "unix:/tmp/x.sock", "token": "t", **fields}))
    path.chmod(mode)
    return path


def test_lookup_order(tmp_path: Path) -> None:
    explicit = _config(tmp_path / "conn.json", binding="global")
    home = tmp_path / "home"
    (home / "credentials").mkdir(parents=True)
    _config(home / "credentials" / "owner.json", hub="unix:/tmp/owner.sock")
    env = {"AMUX_MEMORY_CONFIG": str(explicit), "AMUX_HUB": "unix:/tmp/h.sock",
           "AMUX_TOKEN": "tok", "AMUX_HOME": str(home)}
    first = find_connection(env)
    assert (first.hub, first.binding, first.source) == ("unix:/tmp/x.sock", "global",
                                                        "AMUX_MEMORY_CONFIG")
    del env["AMUX_MEMORY_CONFIG"]
    second = find_connection(env)
    assert (second.hub, second.token, second.source) == ("unix:/tmp/h.sock", "tok", "AMUX_HUB")
    del env["AMUX_HUB"]
    third = find_connection({**env, "AMUX_MEMORY_BINDING": "principal:" + "a" * 64})
    assert (third.hub, third.is_local_default) == ("unix:/tmp/owner.sock", True)
    assert third.binding == "principal:" + "a" * 64


def test_problems_are_clear(tmp_path: Path) -> None:
    cases = [
        ({"AMUX_HOME": str(tmp_path / "none")}, "hub_unreachable"),
        ({"AMUX_MEMORY_CONFIG": str(tmp_path / "missing.json")}, "hub_unreachable"),
        ({"AMUX_MEMORY_CONFIG": str(_config(tmp_path / "open.json", 0o644))}, "forbidden"),
        ({"AMUX_MEMORY_CONFIG": str(_config(tmp_path / "bad.json", hub="ftp://x"))},
         "invalid_argument"),
        ({"AMUX_HUB": "localhost:80"}, "invalid_argument"),
    ]
    for env, code in cases:
        with pytest.raises(AmuxError) as caught:
            find_connection(env)
        assert caught.value.code == code, env
