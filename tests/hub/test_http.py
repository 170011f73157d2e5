"""Strict framing against a real Hub: every ambiguous request is refused and nothing runs.

Each malformed request below carries, as its body, a complete upsert of
`smuggled.md`. A parser that reads the framing one way (a length of 0, chunks
it ignores) runs that upsert as a second, pipelined request; a strict one
answers 400 `invalid_argument`, closes, and the document never exists.
"""

from __future__ import annotations

import pytest

from amux.hub.http import MAX_HEAD_BYTES
from tests.hub.rawhttp import connect, exchange, read_answers, request
from tests.hubproc import HubProcess

SMUGGLED = "smuggled.md"

AMBIGUOUS = {
    "whitespace before the colon": "Content-Length : 0\r\n",
    "a plus sign": "Content-Length: +0\r\n",
    "a minus sign": "Content-Length: -0\r\n",
    "an underscore": "Content-Length: 0_0\r\n",
    "hex": "Content-Length: 0x0\r\n",
    "conflicting lengths": "Content-Length: {n}\r\nContent-Length: 0\r\n",
    "duplicate lengths": "Content-Length: 0\r\nContent-Length: 0\r\n",
    "a length list": "Content-Length: 0, 0\r\n",
    "chunked": "Transfer-Encoding: chunked\r\n",
    "chunked and a length": "Content-Length: {n}\r\nTransfer-Encoding: chunked\r\n",
    "another transfer coding": "Transfer-Encoding: gzip\r\nContent-Length: {n}\r\n",
    "obs-fold": "Content-Length: {n}\r\nX-Note: a\r\n Content-Length: 0\r\n",
    "obs-fold with a tab": "X-Note: a\r\n\tContent-Length: 0\r\n",
    "two tokens": "Authorization: Bearer amux_{bogus}\r\nContent-Length: {n}\r\n",
}


def _smuggling(hub: HubProcess, headers: str) -> bytes:
    inner = request("/v1/memory/upsert", {"path": SMUGGLED, "content": "smuggled\n",
                                          "expected_revision": "absent"}, hub.owner_token)
    head = (f"POST /v1/status HTTP/1.1\r\nHost: amux-hub\r\n"
            f"Authorization: Bearer {hub.owner_token}\r\n"
            + headers.format(n=len(inner), bogus="x" * 43) + "\r\n")
    return head.encode("latin-1") + inner


def _assert_not_written(hub: HubProcess) -> None:
    assert not (hub.home / "memory" / "global" / SMUGGLED).exists()
    assert hub.call("/v1/memory/get", {"path": SMUGGLED})[1]["exists"] is False


@pytest.mark.parametrize("headers", AMBIGUOUS.values(), ids=AMBIGUOUS.keys())
def test_ambiguous_framing_is_refused_and_nothing_runs(memory_hub: HubProcess,
                                                       headers: str) -> None:
    answers = exchange(memory_hub.socket_path, _smuggling(memory_hub, headers))
    assert [(a.status, a.code) for a in answers] == [(400, "invalid_argument")]
    assert answers[0].closes
    _assert_not_written(memory_hub)


def test_a_nel_byte_does_not_split_a_header(memory_hub: HubProcess) -> None:
    """U+0085 (NEL) is an opaque byte inside a value: the header stays one header, the
    real Content-Length frames the body, and the upsert inside it is just body text."""
    raw = _smuggling(memory_hub, "Content-Length: {n}\r\nX-Note: a\x85Content-Length: 0\r\n")
    answers = exchange(memory_hub.socket_path, raw)
    assert [(a.status, a.code) for a in answers] == [(400, "invalid_argument")]
    assert "JSON" in answers[0].body["error"]["message"]  # the body, read as the body
    _assert_not_written(memory_hub)


def test_pipelined_requests_keep_their_framing(memory_hub: HubProcess) -> None:
    put = request("/v1/memory/upsert", {"path": "p.md", "content": "p\n",
                                        "expected_revision": "absent"}, memory_hub.owner_token)
    get = request("/v1/memory/get", {"path": "p.md"}, memory_hub.owner_token)
    answers = exchange(memory_hub.socket_path, put + get + get)
    assert [a.status for a in answers] == [200, 200, 200]
    assert answers[2].body["content"] == "p\n"


def test_a_head_over_the_limit_is_413(memory_hub: HubProcess) -> None:
    padding = "X-Pad: " + "p" * MAX_HEAD_BYTES + "\r\n"
    raw = request("/v1/status", {}, memory_hub.owner_token, headers=padding)
    answers = exchange(memory_hub.socket_path, raw)
    assert [(a.status, a.code) for a in answers] == [(413, "quota_exceeded")]
    error = answers[0].body["error"]
    assert (error["quota"], error["limit"]) == ("request_head_bytes", MAX_HEAD_BYTES)


def test_a_head_just_under_the_limit_is_served(memory_hub: HubProcess) -> None:
    raw = request("/v1/status", {}, memory_hub.owner_token,
                  headers="X-Pad: " + "p" * (MAX_HEAD_BYTES - 400) + "\r\n")
    with connect(memory_hub.socket_path) as client:
        client.sendall(raw + raw)  # and the connection stays usable after it
        assert [a.status for a in read_answers(client, 2)] == [200, 200]
