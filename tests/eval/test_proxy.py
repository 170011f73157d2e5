"""The recording proxy of `amux eval live` and an endpoint URL with a user and password:
it forwarded to the URL whole, which urllib cannot (and its error line named the
password); now the host alone, with them as the request's `Authorization`."""

from __future__ import annotations

import base64
import http.server
import secrets
import socket
import threading
import urllib.error
import urllib.request
from typing import Any

import pytest

from amux.eval.proxy import Proxy


def test_the_user_and_password_go_as_basic_authorization_and_are_never_named() -> None:
    heads: list[str] = []

    class Upstream(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            heads.append(str(self.headers))
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"{}")

        def log_message(self, format: str, *args: Any) -> None:
            pass

    upstream = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Upstream)
    thread = threading.Thread(target=upstream.serve_forever, daemon=True)
    thread.start()
    password = f"s3cr3t-{secrets.token_hex(4)}"
    host = f"127.0.0.1:{upstream.server_address[1]}"
    try:
        with Proxy(f"http://me:{password}@{host}/v1") as proxy:
            assert proxy.upstream == f"http://{host}"
            with urllib.request.urlopen(proxy.base_url(f"http://me:{password}@{host}/v1")
                                        + "/models", timeout=10) as answer:
                assert answer.status == 200
    finally:
        upstream.shutdown()
        upstream.server_close()
        thread.join(timeout=10)
    [head] = heads
    assert f"Host: {host}\n" in head
    assert f"Authorization: Basic {base64.b64encode(f'me:{password}'.encode()).decode()}" in head

    with socket.socket() as probe:  # nothing answers there now
        probe.bind(("127.0.0.1", 0))
        gone = f"http://me:{password}@127.0.0.1:{probe.getsockname()[1]}"
    with Proxy(gone) as proxy:
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(proxy.url + "/v1/models", timeout=10)
        assert refused.value.code == 502 and password not in refused.value.read().decode()
        [exchange] = proxy.exchanges()
        assert exchange.error is not None and password not in exchange.error
