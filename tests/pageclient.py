"""The memory page spoken to as a browser would, over raw HTTP (tests of `amux ui`)."""

from __future__ import annotations

import http.client
import json
from typing import Any


class PageClient:
    """`amux ui`'s address, port and key, and requests to it with chosen headers."""

    def __init__(self, started: dict[str, Any]) -> None:
        self.url: str = started["url"]
        self.port: int = started["port"]
        self.pid: int = started["pid"]
        self.key = self.url.partition("#key=")[2]
        self.origin = f"http://127.0.0.1:{self.port}"

    def headers(self, **changes: str | None) -> dict[str, str]:
        """What the page itself sends, with `changes` (None drops a header)."""
        sent = {"Host": f"127.0.0.1:{self.port}", "Origin": self.origin,
                "X-Amux-Key": self.key, "Content-Type": "application/json",
                "Sec-Fetch-Site": "same-origin"}
        for name, value in changes.items():
            name = name.replace("_", "-")
            if value is None:
                sent.pop(name, None)
            else:
                sent[name] = value
        return sent

    def request(self, method: str, path: str, body: bytes | None = None,
                **changes: str | None) -> tuple[int, dict[str, str], bytes]:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            connection.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
            for name, value in self.headers(**changes).items():
                connection.putheader(name, value)
            if body is not None:
                connection.putheader("Content-Length", str(len(body)))
            connection.endheaders(body)
            response = connection.getresponse()
            return response.status, dict(response.getheaders()), response.read()
        finally:
            connection.close()

    def api(self, name: str, body: dict[str, Any] | None = None,
            **changes: str | None) -> tuple[int, Any]:
        status, _, data = self.request("POST", f"/api/{name}",
                                       json.dumps(body or {}).encode(), **changes)
        return status, json.loads(data) if data.startswith(b"{") else data
