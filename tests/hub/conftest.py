"""Fixtures of the Hub tests that open raw sockets."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest


@pytest.fixture
def opened() -> Iterator[list[socket.socket]]:
    """Where a test puts the sockets it opens: all closed at its end, however it ends."""
    sockets: list[socket.socket] = []
    yield sockets
    for sock in sockets:
        sock.close()
