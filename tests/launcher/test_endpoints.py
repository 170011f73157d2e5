"""`amux run --endpoint`'s check that something answers at the model endpoint: directly over
a socket for plain HTTP without a proxy, through urllib (and its proxies) otherwise."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest

from amux.launcher import endpoints


@pytest.fixture
def server() -> Iterator[tuple[socket.socket, int]]:
    listener = socket.create_server(("127.0.0.1", 0))
    yield listener, listener.getsockname()[1]
    listener.close()


def serve_once(listener: socket.socket, reply: bytes) -> threading.Thread:
    def answer() -> None:
        connection, _ = listener.accept()
        with connection:
            connection.recv(1024)
            connection.sendall(reply)

    thread = threading.Thread(target=answer, daemon=True)
    thread.start()
    return thread


def test_any_http_answer_even_an_error_means_a_server_is_there(
        server: tuple[socket.socket, int], monkeypatch: pytest.MonkeyPatch) -> None:
    for name in endpoints.PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    listener, port = server
    serve_once(listener, b"HTTP/1.0 404 Not Found\r\n\r\n")
    assert endpoints.unreachable(f"http://127.0.0.1:{port}/v1") is None
    serve_once(listener, b"")  # accepts, then closes without a word
    said = endpoints.unreachable(f"http://127.0.0.1:{port}/v1")
    assert said == (f"nothing answers at http://127.0.0.1:{port} (it closed the connection "
                    "without answering)")


def test_nothing_listening_and_silence_are_said(server: tuple[socket.socket, int],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    for name in endpoints.PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    listener, port = server
    said = endpoints.unreachable(f"http://127.0.0.1:{port}/v1", timeout=0.3)  # never accepts
    assert said == f"nothing answers at http://127.0.0.1:{port} (no answer within 0.3 s)"
    listener.close()
    refused = endpoints.unreachable(f"http://127.0.0.1:{port}/v1")
    assert refused is not None and "refused" in refused


def test_a_proxy_in_the_environment_is_used_as_the_agent_would(
        server: tuple[socket.socket, int], monkeypatch: pytest.MonkeyPatch) -> None:
    """With HTTP_PROXY set the check goes through urllib, which asks the proxy."""
    listener, port = server
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{port}")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    proxied = serve_once(listener, b"HTTP/1.0 200 OK\r\n\r\n")
    assert endpoints.unreachable("http://model.invalid:11434/v1") is None
    proxied.join(timeout=5)
    assert not proxied.is_alive()  # the proxy was asked, not model.invalid
