"""Whether a model endpoint answers, asked before an agent is started against it.

An agent pointed at a server that is down does not say so: Codex reconnects for minutes,
Claude retries for two, Pi fails after twenty seconds, and each ends with a message about
something else. So `amux run --endpoint` (and the resume of such a session) first asks the
endpoint's host for anything (any HTTP answer, even an error status, means a server is
there) within `CHECK_SECONDS`, and refuses with one line naming the URL and the fix when
nothing answers. `amux eval live` asks the same, with its own patience. The question never
carries the URL's user and password (an HTTP answer, even 401, is all it needs), and no
line names them.

A plain-HTTP endpoint with no proxy in the environment (a local model server, the common
case) is asked over a socket directly: `urllib.request` alone costs a launch ~40 ms of
imports. Anything else (HTTPS, a proxy) goes through `urllib`, as the agent's requests
go through its proxies.
"""

from __future__ import annotations

import contextlib
import os
import socket
from urllib.parse import SplitResult, urlsplit

from amux.adapters.base import without_userinfo

CHECK_SECONDS = 2.5


def root(base_url: str) -> str:
    """The endpoint's scheme and host, without any user and password
    (`http://127.0.0.1:11434`)."""
    parts = urlsplit(base_url)
    return without_userinfo(f"{parts.scheme}://{parts.netloc}")


PROXY_VARIABLES = ("http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY")


def unreachable(base_url: str, timeout: float = CHECK_SECONDS) -> str | None:
    """Why nothing answers at the endpoint's host, or None. Environment proxies apply,
    as they do in the agent's run."""
    parts = urlsplit(root(base_url))
    if parts.scheme == "http" and not any(os.environ.get(name) for name in PROXY_VARIABLES):
        return _asked_directly(parts, timeout)
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(parts.geturl() + "/", timeout=timeout):
            return None
    except urllib.error.HTTPError:
        return None
    except (urllib.error.URLError, OSError, ValueError) as error:
        reason = getattr(error, "reason", error)
        if isinstance(reason, TimeoutError) or "timed out" in str(reason):
            reason = f"no answer within {timeout:g} s"
        return f"nothing answers at {parts.geturl()} ({reason})"


def _asked_directly(parts: SplitResult, timeout: float) -> str | None:
    """`unreachable` over a socket: any bytes back mean a server is there. `parts`: the
    endpoint's `root`, whose host and port (as given) are the `Host:`."""
    try:
        address = (parts.hostname or "", parts.port or 80)
        with socket.create_connection(address, timeout=timeout) as sock:
            sock.sendall(f"GET / HTTP/1.0\r\nHost: {parts.netloc}\r\n\r\n".encode())
            if sock.recv(4096):
                _read_out(sock)
                return None
            reason = "it closed the connection without answering"
    except TimeoutError:
        reason = f"no answer within {timeout:g} s"
    except (OSError, ValueError) as error:
        reason = str(error)
    return f"nothing answers at {parts.geturl()} ({reason})"


def _read_out(sock: socket.socket) -> None:
    """The rest of a short answer, briefly: closing with it unread would reset the
    connection under the server (which may log it as an error)."""
    sock.settimeout(0.2)
    with contextlib.suppress(OSError):
        for _ in range(16):
            if not sock.recv(4096):
                return
