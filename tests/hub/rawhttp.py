"""Raw HTTP/1.1 bytes to and from a Hub socket: for requests no HTTP library would send."""

from __future__ import annotations

import json
import socket
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Answer:
    status: int
    head: str
    body: Any

    @property
    def code(self) -> str | None:
        """The Appendix A error code, if the answer is an error."""
        error = self.body.get("error") if isinstance(self.body, dict) else None
        return error["code"] if error else None

    @property
    def closes(self) -> bool:
        return "\r\nconnection: close" in self.head.lower()


def request(path: str, body: object, token: str, *, headers: str = "") -> bytes:
    """A well-formed POST with a JSON body; `headers` (CRLF-terminated lines) go before
    its Content-Length."""
    payload = json.dumps(body).encode()
    return (f"POST {path} HTTP/1.1\r\nHost: amux-hub\r\nAuthorization: Bearer {token}\r\n"
            f"{headers}Content-Length: {len(payload)}\r\n\r\n").encode() + payload


def parse(data: bytes) -> tuple[list[Answer], bytes]:
    """The complete responses at the start of `data`, and the bytes after them."""
    answers = []
    while (end := data.find(b"\r\n\r\n")) >= 0:
        head = data[:end].decode("latin-1")
        length = int(head.lower().split("content-length:")[1].split("\r\n")[0])
        if len(data) < end + 4 + length:
            break
        body = data[end + 4: end + 4 + length]
        answers.append(Answer(int(head.split()[1]), head, json.loads(body)))
        data = data[end + 4 + length:]
    return answers, data


def read_answers(client: socket.socket, count: int) -> list[Answer]:
    """`count` responses off one kept-alive connection, in order."""
    buffer, answers = b"", []
    while len(answers) < count:
        chunk = client.recv(65536)
        assert chunk, f"connection closed after {len(answers)} of {count} answers"
        buffer += chunk
        more, buffer = parse(buffer)
        answers += more
    assert not buffer, "bytes after the answers"
    return answers


def read_to_end(client: socket.socket) -> bytes:
    """Everything until the Hub closes (a reset after its answer counts as closing)."""
    data = b""
    try:
        while chunk := client.recv(65536):
            data += chunk
    except ConnectionResetError:
        pass
    return data


def connect(path: str, timeout: float = 10) -> socket.socket:
    """A connected Unix socket. The connect itself blocks: with a timeout set it would
    fail at once (EAGAIN) whenever the Hub's backlog is full."""
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    client.connect(path)
    client.settimeout(timeout)
    return client


def exchange(path: str, raw: bytes) -> list[Answer]:
    """Send `raw`, say nothing more (half-close), and return every answer until the Hub
    closes: pipelined requests in `raw` all get their turn, a refusal ends it."""
    with connect(path) as client:
        client.sendall(raw)
        client.shutdown(socket.SHUT_WR)
        answers, rest = parse(read_to_end(client))
    assert not rest, f"a partial answer: {rest[:200]!r}"
    return answers
