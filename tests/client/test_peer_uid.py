"""Before a token goes over a Unix socket, the client checks who listens (SO_PEERCRED).

The attacker is a real second Unix user listening on a real socket; what it read
is recorded, so each test can assert that no token reached it. The expected uid
comes from the connection (`amux.client.connection`): `hub_uid` in a connection
config, else the config file's owner, else (AMUX_HUB) the client's own uid.
"""

from __future__ import annotations

import json
import os
import pwd
import secrets
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from amux.client.connection import Connection, find_connection, read_config
from amux.client.transport import HubClient
from amux.errors import AmuxError
from amux.hub.paths import owner_socket_path
from tests.hostile import as_user, require_root, throwaway_user
from tests.hubproc import HubProcess, amux
from tests.wait import wait_until

LISTENER = r'''
import socket, sys
path, record = sys.argv[1], sys.argv[2]
body = b'{"path":"notes.md","exists":true,"content":"the attacker chose this\\n"}'
server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
server.bind(path)
server.listen(8)
print("listening", flush=True)
while True:
    conn, _ = server.accept()
    conn.settimeout(2)
    data = b""
    try:
        while b"\r\n\r\n" not in data:
            chunk = conn.recv(65536)
            if not chunk:
                break
            data += chunk
    except socket.timeout:
        pass
    if data:
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
                     + str(len(body)).encode() + b"\r\nConnection: close\r\n\r\n" + body)
    conn.close()
    with open(record, "a") as handle:
        handle.write(data.hex() + "\n")
'''


@dataclass
class Listener:
    user: pwd.struct_passwd
    socket: Path
    record: Path

    def connections(self, at_least: int) -> list[bytes]:
        """What each connection sent, once `at_least` connections were recorded."""
        def recorded() -> list[str]:
            lines = self.record.read_text().splitlines() if self.record.exists() else []
            return lines if len(lines) >= at_least else []

        lines = wait_until(recorded, 10, f"the client to connect {at_least} time(s)")
        return [bytes.fromhex(line) for line in lines]

    def assert_no_token(self, token: str, at_least: int = 1) -> None:
        received = self.connections(at_least)
        for data in received:
            assert b"authorization" not in data.lower() and token.encode() not in data, data


@contextmanager
def listening(user: pwd.struct_passwd, socket: Path) -> Iterator[Listener]:
    """`user` listens on `socket`, in a directory of theirs (made here when missing)."""
    if not socket.parent.exists():
        assert as_user(user, "mkdir", "-m", "0755", str(socket.parent)).wait(timeout=30) == 0
    listener = Listener(user, socket, socket.parent / "received")
    process = as_user(user, "/usr/bin/python3", "-c", LISTENER, str(socket),
                      str(listener.record), stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None and process.stdout.readline() == "listening\n"
        yield listener
    finally:
        process.kill()
        process.communicate()


@pytest.mark.parametrize("how", ["AMUX_MEMORY_CONFIG", "AMUX_HUB"])
def test_the_client_sends_no_token_to_another_users_socket(
        how: str, temp_root: Path, tmp_path: Path) -> None:
    token = secrets.token_urlsafe(32)
    with throwaway_user() as attacker, \
            listening(attacker, temp_root / "theirs" / "hub.sock") as fake:
        hub = f"unix:{fake.socket}"
        if how == "AMUX_MEMORY_CONFIG":  # a launcher's config: the Hub is root's
            config = tmp_path / "memory.json"
            config.write_text(json.dumps({"version": 1, "hub": hub, "token": token,
                                          "hub_uid": 0}))
            config.chmod(0o600)
            env = {how: str(config)}
        else:  # no hub_uid: the Hub must be this client's own user (root here)
            env = {"AMUX_HUB": hub, "AMUX_TOKEN": token}
        code, out, err = amux(tmp_path / "home", "memory", "show", "notes.md", env=env)
        assert code == 4, (out, err)
        assert "the attacker chose this" not in str(out)
        assert f"refusing to send the token to {hub} ({how})" in err
        assert f"served by uid {attacker.pw_uid} ({attacker.pw_name}), pid " in err
        assert "but the Hub runs as uid 0 (root)" in err
        fake.assert_no_token(token)


def test_the_local_default_refuses_a_socket_planted_in_the_fallback_directory(
        temp_root: Path, tmp_path: Path) -> None:
    """The story of issue 11: the Hub ran before, /tmp was cleared (a reboot), another
    user made `/tmp/amux-<uid>` and listens where the owner's credential points."""
    home = tmp_path / ("h" * 100) / "home"
    fallback = owner_socket_path(home).parent
    assert fallback.parent == temp_root
    first = HubProcess(home)
    first.stop()
    token = first.owner_token
    shutil.rmtree(fallback)
    with throwaway_user() as attacker, listening(attacker, Path(first.socket_path)) as fake:
        code, out, err = amux(home, "memory", "show", "notes.md",
                              env={"TMPDIR": str(temp_root)})
        assert code == 4, (out, err)
        assert "the attacker chose this" not in str(out)
        assert f"served by uid {attacker.pw_uid} ({attacker.pw_name})" in err
        assert "(local default)" in err
        fake.assert_no_token(token)
        for command in ("status", "start"):  # an impostor is not "not running"
            code, out, err = amux(home, "hub", command, env={"TMPDIR": str(temp_root)})
            assert code == 4, (command, out, err)
            assert f"served by uid {attacker.pw_uid}" in err, (command, err)
        fake.assert_no_token(token, at_least=3)


def test_hub_uid_names_the_user_the_hub_runs_as(temp_root: Path, tmp_path: Path) -> None:
    """A Hub run by another user is reached when the connection config says so, and only
    then: without `hub_uid` the config's owner (root here) is expected."""
    token = secrets.token_urlsafe(32)
    with throwaway_user() as other, \
            listening(other, temp_root / "theirs" / "hub.sock") as fake:
        config = tmp_path / "memory.json"
        fields = {"version": 1, "hub": f"unix:{fake.socket}", "token": token}
        config.write_text(json.dumps(fields))
        config.chmod(0o600)
        with pytest.raises(AmuxError) as caught, \
                HubClient(read_config(config, "test", None)) as client:
            client.call("/v1/memory/get", {"path": "notes.md"})
        assert caught.value.code == "hub_unreachable"
        assert caught.value.details == {"peer_uid": other.pw_uid, "hub_uid": 0}
        fake.assert_no_token(token)
        config.write_text(json.dumps({**fields, "hub_uid": other.pw_uid}))
        with HubClient(read_config(config, "test", None)) as client:
            answer = client.call("/v1/memory/get", {"path": "notes.md"})
        assert answer["content"] == "the attacker chose this\n"


def test_root_is_accepted_as_the_hub(memory_hub: HubProcess) -> None:
    """Root can read every token file anyway; refusing it as a peer would protect nothing."""
    require_root("a Hub run by root")
    connection = Connection(f"unix:{memory_hub.socket_path}", memory_hub.owner_token, None,
                            None, "test", hub_uid=65534)
    with HubClient(connection) as client:
        assert client.call("/v1/status", {})["running"] is True


def test_where_the_expected_uid_comes_from(tmp_path: Path) -> None:
    def config(name: str, **fields: object) -> Path:
        path = tmp_path / name
        path.write_text(json.dumps({"version": 1, "hub": "unix:/x.sock", "token": "t",
                                    **fields}))
        path.chmod(0o600)
        return path

    assert read_config(config("declared.json", hub_uid=4242), "test", None).hub_uid == 4242
    owned = config("owned.json")
    if os.geteuid() == 0:
        os.chown(owned, 4343, 4343)
    assert read_config(owned, "test", None).hub_uid == os.stat(owned).st_uid
    assert find_connection({"AMUX_HUB": "unix:/x.sock"}).hub_uid == os.geteuid()
    for bad in ("0", -1, True, None):
        with pytest.raises(AmuxError) as caught:
            read_config(config("bad.json", hub_uid=bad), "test", None)
        assert caught.value.code == "invalid_argument" and "hub_uid" in caught.value.message
