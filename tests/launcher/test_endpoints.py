"""`amux run --endpoint`'s check that something answers at the model endpoint: directly over
a socket for plain HTTP without a proxy, through urllib (and its proxies) otherwise."""

from __future__ import annotations

import secrets
import socket
import threading
import urllib.request
from collections.abc import Iterator

import pytest

from amux.launcher import endpoints


@pytest.fixture
def server() -> Iterator[tuple[socket.socket, int]]:
    listener = socket.create_server(("127.0.0.1", 0))
    yield listener, listener.getsockname()[1]
    listener.close()


@pytest.fixture
def fresh_opener(monkeypatch: pytest.MonkeyPatch) -> None:
    """`urlopen` keeps the opener it first builds, with the proxies of that moment's
    environment: a test that sets a proxy gets its own, and leaves none behind."""
    monkeypatch.setattr(urllib.request, "_opener", None)


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
        server: tuple[socket.socket, int], monkeypatch: pytest.MonkeyPatch,
        fresh_opener: None) -> None:
    """With HTTP_PROXY set the check goes through urllib, which asks the proxy."""
    listener, port = server
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{port}")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    proxied = serve_once(listener, b"HTTP/1.0 200 OK\r\n\r\n")
    assert endpoints.unreachable("http://model.invalid:11434/v1") is None
    proxied.join(timeout=5)
    assert not proxied.is_alive()  # the proxy was asked, not model.invalid



def record_once(listener: socket.socket, reply: bytes) -> tuple[threading.Thread, list[bytes]]:
    """Answers one request with `reply`; the list gets the request's raw head."""
    seen: list[bytes] = []

    def answer() -> None:
        connection, _ = listener.accept()
        with connection:
            connection.settimeout(5)
            head = b""
            while b"\r\n\r\n" not in head:
                chunk = connection.recv(4096)
                if not chunk:
                    break
                head += chunk
            seen.append(head)
            connection.sendall(reply)

    thread = threading.Thread(target=answer, daemon=True)
    thread.start()
    return thread, seen


@pytest.mark.parametrize("proxied", [False, True])
def test_the_check_never_sends_the_urls_user_and_password(
        server: tuple[socket.socket, int], monkeypatch: pytest.MonkeyPatch,
        fresh_opener: None, proxied: bool) -> None:
    """`Host:` was the URL's netloc, user and password included, and urllib's path used
    the URL whole: now both ask the host and port only, and no line names them."""
    listener, port = server
    for name in (*endpoints.PROXY_VARIABLES, "NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    if proxied:  # urllib's path: the request goes to the proxy, naming the URL
        monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{port}")
    password = f"s3cr3t-{secrets.token_hex(4)}"
    host = "model.invalid:8080" if proxied else f"127.0.0.1:{port}"
    thread, seen = record_once(listener, b"HTTP/1.0 401 Unauthorized\r\n\r\n")
    assert endpoints.unreachable(f"http://me:{password}@{host}/v1") is None
    thread.join(timeout=5)
    [head] = seen
    assert f"\r\nHost: {host}\r\n".encode() in head
    assert password.encode() not in head and b"me:" not in head and b"@" not in head
    listener.close()  # nothing answers now: the line names the host only
    said = endpoints.unreachable(f"http://me:{password}@127.0.0.1:{port}/v1")
    assert said is not None and password not in said and "me:" not in said
    assert said.startswith(f"nothing answers at http://127.0.0.1:{port} (")


def test_an_ipv6_hosts_host_header_keeps_its_brackets_and_the_port_as_given() -> None:
    """`Host:` is the host and port only: brackets for an IPv6 literal, a port when given."""
    for url, root in (("http://me:pw@[::1]:8080/v1", "http://[::1]:8080"),
                      ("http://me:pw@[::1]/v1", "http://[::1]"),
                      ("https://me@Example.com/v1", "https://Example.com")):
        assert endpoints.root(url) == root
