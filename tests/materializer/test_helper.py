"""The helper that acts as the target user: a real throwaway user, real credentials.

What it must guarantee: the target's uid, gid and groups for good (root cannot be
regained), none of the launcher's descriptors, no imports (the installation may be
unreadable to the target), its errors raised in the launcher as their own kinds, and a
call that hangs, or a request a stopped child never reads, stopped at its timeout,
failing every later call instead of hanging.
"""

from __future__ import annotations

import os
import pwd
import signal
import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from amux.errors import AmuxError, InvalidArgument
from amux.materializer import helper as protocol
from amux.materializer.helper import Helper
from amux.materializer.target import Target
from tests.hostile import throwaway_user


def _who() -> dict[str, Any]:
    return {"uid": os.getuid(), "euid": os.geteuid(), "gid": os.getgid(),
            "groups": sorted(os.getgroups()), "fds": sorted(os.listdir("/proc/self/fd")),
            "sid": os.getsid(0) == os.getpid(), "umask": os.umask(0o077)}


def _regain() -> bool:
    try:
        os.setuid(0)
    except PermissionError:
        return False
    return True


def _fail(kind: str) -> None:
    if kind == "missing":
        open("/nonexistent/file")  # noqa: SIM115 - raises
    if kind == "value":
        raise ValueError("a bad value")
    if kind == "client":
        raise InvalidArgument("said so")
    if kind == "import":
        import this  # noqa: F401 - refused in the helper
    raise KeyError(kind)


OPERATIONS = {"who": _who, "regain": _regain, "fail": _fail,
              "bytes": lambda: b"\x00\xff raw", "sleep": lambda s: time.sleep(s), "length": len,
              "names": lambda: [os.fsdecode(b"caf\xe9"), "é", "\n"], "set": lambda: {1},
              "looks_like_bytes": lambda: {"bytes": "AAAA"}}


@pytest.fixture
def helper() -> Iterator[tuple[Helper, pwd.struct_passwd]]:
    with throwaway_user("amuxt-h") as user:
        target = Target.lookup(user.pw_name)
        process = Helper(target, OPERATIONS)
        try:
            yield process, user
        finally:
            process.close()


@pytest.mark.timeout(60)
def test_it_is_the_target_for_good_and_holds_nothing_of_ours(
        helper: tuple[Helper, pwd.struct_passwd]) -> None:
    process, user = helper
    kept = os.open("/dev/null", os.O_RDONLY)  # a descriptor of ours it must not have
    try:
        who = process.call("who")
    finally:
        os.close(kept)
    assert (who["uid"], who["euid"], who["gid"]) == (user.pw_uid, user.pw_uid, user.pw_gid)
    assert who["groups"] == sorted(set(os.getgrouplist(user.pw_name, user.pw_gid)))
    assert 0 not in who["groups"]
    assert len(who["fds"]) == 5  # stdin, stdout, stderr (/dev/null), its socket, listdir's
    assert who["sid"] and who["umask"] == 0o077
    assert process.call("regain") is False


@pytest.mark.timeout(60)
def test_errors_come_back_as_their_own_kinds(helper: tuple[Helper, pwd.struct_passwd]) -> None:
    process, _ = helper
    with pytest.raises(FileNotFoundError) as missing:
        process.call("fail", "missing")
    assert missing.value.filename == "/nonexistent/file"
    with pytest.raises(ValueError, match="a bad value"):
        process.call("fail", "value")
    with pytest.raises(AmuxError) as said:
        process.call("fail", "client")
    assert (said.value.code, said.value.message) == ("invalid_argument", "said so")
    with pytest.raises(AmuxError, match="imports nothing"):
        process.call("fail", "import")
    with pytest.raises(AmuxError, match="KeyError"):
        process.call("fail", "other")
    with pytest.raises(AmuxError, match="its answer"):
        process.call("set")  # no JSON value: said, and the helper goes on
    assert process.call("bytes") == b"\x00\xff raw"
    assert process.call("names") == [os.fsdecode(b"caf\xe9"), "é", "\n"]
    assert process.call("looks_like_bytes") == {"bytes": "AAAA"}


@pytest.mark.timeout(60)
def test_a_call_that_hangs_is_stopped_and_every_later_call_fails(
        helper: tuple[Helper, pwd.struct_passwd]) -> None:
    process, _ = helper
    started = time.monotonic()
    with pytest.raises(OSError, match="took longer than 1 s"):
        process.call("sleep", 30, timeout=1)
    assert time.monotonic() - started < 5
    with pytest.raises(OSError, match="took longer than 1 s"):
        process.call("who")


@pytest.mark.timeout(60)
def test_a_request_a_stopped_helper_never_reads_is_given_up_at_the_timeout(
        helper: tuple[Helper, pwd.struct_passwd]) -> None:
    """The target stops (SIGSTOP) its helper: a request larger than the socket's buffer
    (a plan file carrying the target's own text) cannot be sent, so the send is bounded
    by the call's timeout too; the child is killed and reaped, and every later call fails."""
    process, _ = helper
    text = "x" * (8 << 20)
    assert process.call("length", text) == len(text)  # sent whole to a running helper
    pid = process._pid
    assert pid is not None
    os.kill(pid, signal.SIGSTOP)
    started = time.monotonic()
    with pytest.raises(OSError, match="took longer than 1 s"):
        process.call("length", text, timeout=1)
    assert time.monotonic() - started < 5
    with pytest.raises(ChildProcessError):  # killed and reaped: no longer our child
        os.waitpid(pid, os.WNOHANG)
    with pytest.raises(OSError, match="took longer than 1 s"):
        process.call("who")


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(st.characters(codec=None)),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20)


@settings(max_examples=200, deadline=None)
@given(JSON, st.binary(max_size=256))
def test_every_value_and_bytes_cross_the_wire_intact(value: Any, data: bytes) -> None:
    """The frames both ends use: any JSON value (lone surrogates, as undecodable file
    names are, included) and any bytes come out as they went in."""
    ours, theirs = socket.socketpair()
    with ours, theirs:
        protocol._send(ours, protocol._reply(value))
        assert protocol._answer(protocol._receive(theirs, time.monotonic() + 5, None)) == value
        protocol._send(ours, protocol._reply(data))
        assert protocol._answer(protocol._receive(theirs, None, None)) == data
