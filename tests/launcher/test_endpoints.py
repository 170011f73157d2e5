"""`amux run --endpoint`'s check that something answers at the model endpoint: directly over
a socket for plain HTTP without a proxy, through urllib (and its proxies) otherwise."""

from __future__ import annotations

import re
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
            length = re.search(rb"(?i)\r\ncontent-length: *(\d+)", head)
            body = len(head.partition(b"\r\n\r\n")[2])
            while length and body < int(length.group(1)):  # read whole: closing with
                chunk = connection.recv(4096)  # a body unread would reset the connection
                if not chunk:
                    break
                body += len(chunk)
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


@pytest.mark.parametrize(("name", "given", "api", "url", "base"), [
    # Claude adds /v1/messages to the root: a /v1 given too went to /v1/v1/messages
    ("claude", "http://h:11434/v1", None, "http://h:11434", "http://h:11434/v1"),
    ("claude", "http://h:11434/v1/", None, "http://h:11434", "http://h:11434/v1"),
    ("claude", "https://api.example/anthropic", None, "https://api.example/anthropic",
     "https://api.example/anthropic/v1"),
    # the OpenAI agents add only the operation to the API's /v1: the root gets it
    ("codex", "http://h:11434", None, "http://h:11434/v1", "http://h:11434/v1"),
    ("pi", "http://h:11434/", None, "http://h:11434/v1", "http://h:11434/v1"),
    ("opencode", "https://api.example/api/paas/v4", None, "https://api.example/api/paas/v4",
     "https://api.example/api/paas/v4"),  # a base URL of its own: left as it is
    # the same agent, another kind: the form of that kind
    ("pi", "http://h:8000/v1", "anthropic", "http://h:8000", "http://h:8000/v1"),
    ("opencode", "http://h:8000", "anthropic", "http://h:8000/v1", "http://h:8000/v1"),
    ("copilot", "http://h:8000/v1", "anthropic", "http://h:8000", "http://h:8000/v1"),
    ("qwen", "http://h:8000/v1beta", "gemini", "http://h:8000", "http://h:8000/v1beta"),
    # Gemini adds /v1beta/models/… to the root
    ("gemini", "http://h:8000/v1beta", None, "http://h:8000", "http://h:8000/v1beta"),
    ("gemini", "http://h:8000/v1", None, "http://h:8000", "http://h:8000/v1beta"),
    # a user and password stay in the URL the agent gets, never in the line
    ("claude", "http://me:pw@h:1/v1", None, "http://me:pw@h:1", "http://me:pw@h:1/v1"),
])
def test_the_url_is_put_in_the_form_its_agent_takes(name: str, given: str, api: str | None,
                                                     url: str, base: str) -> None:
    from amux.adapters import ADAPTERS
    from amux.adapters.base import EndpointRequest

    adapter = ADAPTERS[name]
    request = EndpointRequest(given, "m", api, "KEY")  # type: ignore[arg-type]
    found = endpoints.endpoint_url(request, adapter.display_name, adapter.endpoint_paths)
    assert found.endpoint == request._replace(url=url) and found.base == base
    changed = url.rstrip("/") != given.rstrip("/")
    assert (found.changed is not None) == changed
    if found.changed:
        assert found.changed.startswith(f"{adapter.display_name} ")
        assert found.changed.endswith(f", so it gets {url.replace('me:pw@', '')}")
        assert "pw" not in found.changed
    again = endpoints.endpoint_url(found.endpoint, adapter.display_name, adapter.endpoint_paths)
    assert again == found._replace(changed=None)  # put right once, it stays


def test_a_kind_the_agent_cannot_use_is_left_to_its_plan() -> None:
    from amux.adapters import ADAPTERS
    from amux.adapters.base import EndpointRequest

    claude = ADAPTERS["claude"]
    request = EndpointRequest("http://h:1/v1", "m", "openai")
    found = endpoints.endpoint_url(request, "Claude Code", claude.endpoint_paths)
    assert found == endpoints.EndpointUrl(request, None, request.url, None)
    assert endpoints.not_the_api(found, None) is None  # nothing asked: the plan refuses


def answering(listener: socket.socket, status: str, content_type: str,
              body: bytes) -> tuple[threading.Thread, list[bytes]]:
    return record_once(listener, (f"HTTP/1.0 {status}\r\nContent-Type: {content_type}\r\n"
                                  "Server: TestServer/1.0\r\n\r\n").encode() + body)


@pytest.mark.parametrize(("api", "status", "content_type", "body", "refused"), [
    ("openai", "200 OK", "application/json", b'{"object": "list", "data": []}', False),
    ("openai", "401 Unauthorized", "application/json", b'{"error": "key"}', False),
    ("anthropic", "400 Bad Request", "application/json", b'{"type": "error"}', False),
    ("gemini", "403 Forbidden", "application/json", b'{"error": {}}', False),
    ("openai", "404 Not Found", "text/html", b"<html>Not Found</html>", True),
    ("openai", "404 Not Found", "application/json", b'{"detail": "Not Found"}', True),
    ("anthropic", "501 Unsupported method", "text/html", b"<html>501</html>", True),
    ("gemini", "200 OK", "text/html", b"<html>a web page</html>", True),
])
def test_what_answers_must_be_the_agents_api(
        server: tuple[socket.socket, int], monkeypatch: pytest.MonkeyPatch, api: str,
        status: str, content_type: str, body: bytes, refused: bool) -> None:
    """The question each API defines, under its base: an answer with no JSON, or a 404, 405
    or 501, is named; the API's own error (a key it wants, an empty request) is not."""
    from amux.adapters.base import EndpointRequest

    for name in (*endpoints.PROXY_VARIABLES, "NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    listener, port = server
    base = f"http://127.0.0.1:{port}" + ("/v1beta" if api == "gemini" else "/v1")
    url = endpoints.EndpointUrl(EndpointRequest(base, "m"), api, base, None)  # type: ignore[arg-type]
    thread, seen = answering(listener, status, content_type, body)
    said = endpoints.not_the_api(url, "sk-key")
    thread.join(timeout=5)
    [head] = seen
    asked = {"openai": "GET /v1/models", "anthropic": "POST /v1/messages",
             "gemini": "GET /v1beta/models"}[api]
    assert head.startswith(f"{asked} HTTP/1.1\r\n".encode())
    assert (b"X-Goog-Api-Key: sk-key" if api == "gemini" else
            b"Authorization: Bearer sk-key") in head  # under the endpoint's URL: its key
    if not refused:
        assert said is None
        return
    method, path = asked.split()
    assert said == (f"{method} http://127.0.0.1:{port}{path} answered HTTP {status.split()[0]} "
                    f"({content_type}, TestServer/1.0), "
                    + ("not JSON" if content_type == "text/html" else "the API is not there"))


def test_no_http_answer_is_named_and_silence_left_to_unreachable(
        server: tuple[socket.socket, int], monkeypatch: pytest.MonkeyPatch) -> None:
    from amux.adapters.base import EndpointRequest

    for name in (*endpoints.PROXY_VARIABLES, "NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    listener, port = server
    base = f"http://127.0.0.1:{port}/v1"
    url = endpoints.EndpointUrl(EndpointRequest(base, "m"), "openai", base, None)
    thread, _ = record_once(listener, b"SSH-2.0-OpenSSH_9.6\r\n")
    said = endpoints.not_the_api(url, None)
    thread.join(timeout=5)
    assert said is not None and said.startswith(f"GET {base}/models answered no HTTP (")
    assert endpoints.not_the_api(url, None, ask_seconds=0.3) is None  # no answer


def test_an_error_whose_body_is_cut_short_is_an_answer_not_a_crash(
        server: tuple[socket.socket, int], monkeypatch: pytest.MonkeyPatch) -> None:
    """Reading an error's body raised out of the asker (a reset, a body shorter than said)."""
    from amux.adapters.base import EndpointRequest

    for name in (*endpoints.PROXY_VARIABLES, "NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    listener, port = server
    base = f"http://127.0.0.1:{port}/v1"
    url = endpoints.EndpointUrl(EndpointRequest(base, "m"), "openai", base, None)
    thread, _ = record_once(listener, b"HTTP/1.0 404 Not Found\r\nContent-Length: 100\r\n\r\nab")
    said = endpoints.not_the_api(url, None)
    thread.join(timeout=5)
    assert said == f"GET {base}/models answered HTTP 404, not JSON"
