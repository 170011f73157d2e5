"""The connection configs a launch writes name the Hub's uid (`hub_uid`) for a Unix socket.

The agent's client refuses a socket served by any other user before it sends the
token (tests/client/test_peer_uid.py); an isolated run's config belongs to the
agent's user, so only this field tells its client whom to expect.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from amux.launcher import rundirs, wiring
from tests.hostile import throwaway_user
from tests.hubproc import HubProcess


def test_a_wired_run_names_the_uid_of_the_hub(memory_hub: HubProcess,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AMUX_HOME", str(memory_hub.home))
    home = memory_hub.home
    issued = wiring.delegate(home, wiring.resolve(home), {})
    run = rundirs.plain(home, "s-hub-uid")
    rundirs.make(run, issued.token, Path("/bin/true"), home / "cache")
    try:
        config = json.loads(run.config.read_text())
        owner = os.stat(home / "credentials" / "owner.json").st_uid  # written by the Hub
        assert (config["hub"], config["hub_uid"]) == (f"unix:{memory_hub.socket_path}", owner)
        assert wiring.check(run.config) is None  # and the agent's client accepts that Hub
    finally:
        assert wiring.revoke(issued) is None
        rundirs.remove(run.path)


def token(hub: str, hub_uid: int) -> rundirs.Token:
    return rundirs.Token("alice", "global", "t", "tid", own=False, expires_at=None, hub=hub,
                         hub_uid=hub_uid)


@pytest.fixture
def runs_dir(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    parent = Path(tempfile.mkdtemp(prefix="amux-runs-", dir="/tmp"))
    parent.chmod(0o711)
    monkeypatch.setenv("AMUX_RUNS_DIR", str(parent / "runs"))
    yield parent / "runs"
    shutil.rmtree(parent, ignore_errors=True)


def test_an_isolated_runs_config_names_the_uid_of_the_hub(runs_dir: Path) -> None:
    with throwaway_user() as user:
        run = rundirs.isolated("s-hub-uid", (user.pw_uid, user.pw_gid))
        rundirs.make(run, token("unix:/run/amux/hub.sock", os.geteuid()), Path("/bin/true"),
                     runs_dir.parent / "cache")
        assert os.stat(run.config).st_uid == user.pw_uid  # the agent's file, not the Hub's
        assert json.loads(run.config.read_text())["hub_uid"] == os.geteuid()
        assert os.stat(run.bin_dir / "amux").st_uid == user.pw_uid  # its own client copy


def test_hub_uid_is_written_for_unix_sockets_only() -> None:
    for hub, expected in (("unix:/x.sock", {"hub_uid": 7}), ("https://h:1", {})):
        config = json.loads(rundirs.config(token(hub, 7)))
        assert {k: v for k, v in config.items() if k == "hub_uid"} == expected
