"""A model endpoint, asked before an agent is started against it: whether anything answers,
whether what answers speaks the agent's API, and its URL in the form the agent takes.

**The URL's form.** Agents differ in what they add to the URL they are given: Claude
Code adds `/v1/messages` to the server's root, Codex `/responses` to the API's `/v1`,
Gemini CLI `/v1beta/models/…` to the root (each adapter's `endpoint_paths`). A `/v1` given
to Claude reached `/v1/v1/messages`, the root given to Codex `/responses`, and neither
said so. So `endpoint_url` puts the URL in the agent's form for the API kind it is
pointed at, and the launch says so in one line (the line refusing it, if it is refused):
a trailing version path (`/v1`, Gemini's `/v1beta`) is taken off for an agent that adds
it itself, and added for one that does not (an Anthropic server's `/v1` after any
prefix; for the OpenAI API, whose base URL may end in anything, `…/api/paas/v4`, only to
the bare root).

**Anything there.** An agent pointed at a server that is down does not say so: Codex
reconnects for minutes, Claude retries for two, Pi fails after twenty seconds, and each
ends with a message about something else. So `amux run --endpoint` (and the resume of such
a session) first asks the endpoint's host for anything (any HTTP answer, even an error
status, means a server is there) within `CHECK_SECONDS`, and refuses with one line naming
the URL and the fix when nothing answers. `amux eval live` asks the same, with its own
patience. The question never carries the URL's user and password (an HTTP answer, even
401, is all it needs), and no line names them. A plain-HTTP endpoint with no proxy in the
environment (a local model server, the common case) is asked over a socket directly:
`urllib.request` alone costs ~40 ms of imports, which a caller asking only this (a quick
exit's cause) need not pay. Anything else (HTTPS, a proxy) goes through `urllib`, as the
agent's requests go through its proxies.

**Its API.** A server that answers is not yet a model server: pointed at a plain web server,
Claude hung for 180 s and Codex printed its HTML 501 page. So the launch then asks the one
cheap question the agent's API defines (`QUESTIONS`: the OpenAI model list, an empty
Anthropic Messages request, which a Messages server refuses at once with a JSON error, the
Gemini model list) and refuses an answer that is no JSON, or a 404, 405 or 501 (the API is
not there), naming what answered and what the agent needs.

Every question of `Asker` (this one, and the context window's: `window`) is bounded, goes
to the endpoint's own host and never follows a redirect; the endpoint's key goes only with
questions under its URL, and a user and password in the URL go to its host as
`Authorization: Basic`.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import time
from collections.abc import Mapping
from urllib.parse import SplitResult, urlsplit, urlunsplit

from amux.adapters.base import EndpointApi, EndpointRequest, basic_authorization, without_userinfo
from amux.typing_light import NamedTuple

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any
    from urllib.request import OpenerDirector

CHECK_SECONDS = 2.5
VERSIONS: Mapping[EndpointApi, tuple[str, ...]] = {
    "openai": ("/v1",), "anthropic": ("/v1",), "gemini": ("/v1beta", "/v1")}
"""The version paths that may end a URL given for each API kind, the one its operations
are under first (`/v1/messages`, `/v1beta/models/…`)."""


class EndpointUrl(NamedTuple):
    """An endpoint in the form its agent takes (`endpoint_url`)."""

    endpoint: EndpointRequest
    """With the URL the agent gets."""
    api: EndpointApi | None
    """The API kind it speaks (the agent's default unless given); None: one the agent
    cannot use."""
    base: str
    """Where the API's operations are (`…/v1`, `…/v1beta`): what `QUESTIONS` ask under."""
    changed: str | None
    """What was changed in the URL as given, and why ("Claude Code adds /v1/… itself, so it
    gets http://127.0.0.1:11434"); None: nothing."""


def endpoint_url(endpoint: EndpointRequest, agent: str,
                 paths: Mapping[EndpointApi, str]) -> EndpointUrl:
    """`endpoint` with its URL in the form `agent` takes for its API kind (`paths`: its
    adapter's `endpoint_paths`, default first). A kind the agent cannot use is left as it
    is: the adapter's plan refuses it, naming what the agent needs."""
    api = next(iter(paths), None) if endpoint.api is None else endpoint.api
    parts = urlsplit(endpoint.url)
    path = parts.path.rstrip("/")
    if api is None or api not in paths:
        return EndpointUrl(endpoint, None, endpoint.url, None)
    version = VERSIONS[api][0]
    if api == "openai":  # a base URL of its own, whatever it ends in; the root has none
        base = path or version
    else:
        base = next((path[:-len(v)] for v in VERSIONS[api] if path.endswith(v)), path) + version
    wanted = base if paths[api] else base[:-len(version)]
    if wanted == path:
        return EndpointUrl(endpoint, api, urlunsplit(parts._replace(path=base)), None)
    url = urlunsplit(parts._replace(path=wanted))
    said = (f"{agent} adds {version}/… itself" if len(wanted) < len(path)
            else f"{agent} needs the API's {version} in it")
    return EndpointUrl(endpoint._replace(url=url), api, urlunsplit(parts._replace(path=base)),
                       f"{said}, so it gets {without_userinfo(url)}")


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


# -- asking the endpoint --------------------------------------------------------------------


class Answer(NamedTuple):
    """One answer of the endpoint's server."""

    status: int
    """0: what answered spoke no HTTP (`not_http` says how)."""
    json: Any
    """Its body as JSON; None: it was none."""
    content_type: str = ""
    server: str = ""
    """Its `Server` header: what answered, for a refusal to name."""
    not_http: str = ""

    def shown(self) -> str:
        """`HTTP 404 (text/html, SimpleHTTP/0.6 Python/3.11.2)`."""
        if not self.status:
            return f"no HTTP ({self.not_http})"
        said = ", ".join(part for part in (self.content_type, self.server) if part)
        return f"HTTP {self.status}" + (f" ({said})" if said else "")


def _opener() -> OpenerDirector:
    """urllib's opener without redirects: a redirect is an answer, not a place to send the
    endpoint's credentials."""
    import urllib.request

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: Any, **kwargs: Any) -> None:
            return None

    return urllib.request.build_opener(NoRedirect)


class Asker:
    """Questions to one endpoint's host within one deadline (twice `ask_seconds`), each
    answered by an `Answer`, or None when nothing answered in time."""

    def __init__(self, url: str, api: EndpointApi, key: str | None, ask_seconds: float) -> None:
        self.root = root(url)
        self.base = without_userinfo(url).rstrip("/")
        self.basic = basic_authorization(url)
        self.keyed = ({} if key is None else {"x-goog-api-key": key} if api == "gemini"
                      else {"Authorization": f"Bearer {key}"})
        self.ask_seconds = ask_seconds
        self.deadline = time.monotonic() + 2 * ask_seconds
        self.answered = False
        self.opener = _opener()

    def ask(self, url: str, body: dict[str, Any] | None = None, keyed: bool = False,
            timeout: float | None = None) -> Answer | None:
        """`url`'s answer; `body`: POST it as JSON; `keyed`: with the endpoint's key (a URL
        under the endpoint's); `timeout`: a bound of its own, outside the deadline (loading
        a model)."""
        import http.client
        import urllib.error
        import urllib.request

        if timeout is None:
            timeout = min(self.ask_seconds, self.deadline - time.monotonic())
            if timeout <= 0:
                return None
        headers = {"Accept": "application/json"}
        if self.basic:
            headers["Authorization"] = self.basic
        if keyed:
            headers.update(self.keyed)
        data = None if body is None else json.dumps(body).encode()
        if data is not None:
            headers["Content-Type"] = "application/json"
        request = urllib.request.Request(url, data, headers, method="POST" if data else "GET")
        try:
            with self.opener.open(request, timeout=timeout) as response:
                status, raw, said = response.status, response.read(), response.headers
        except urllib.error.HTTPError as error:
            status, said = error.code, error.headers
            with error:
                try:
                    raw = error.read()
                except (OSError, http.client.HTTPException):  # its body cut short: none
                    raw = b""
        except http.client.HTTPException as error:  # an answer, but no HTTP
            self.answered = True
            return Answer(0, None, not_http=repr(error))
        except (urllib.error.URLError, OSError, ValueError):
            return None
        self.answered = True
        try:
            found = json.loads(raw)
        except ValueError:
            found = None
        return Answer(status, found, said.get("Content-Type", ""), said.get("Server", ""))


class Question(NamedTuple):
    """The one cheap question an API kind defines, asked under its `EndpointUrl.base`."""

    method: str
    path: str
    speaker: str
    """What answers it, for people: "an OpenAI-compatible API"."""


QUESTIONS: Mapping[EndpointApi, Question] = {
    "openai": Question("GET", "/models", "an OpenAI-compatible API"),
    "anthropic": Question("POST", "/messages", "an Anthropic Messages API"),
    "gemini": Question("GET", "/models", "the Gemini API"),
}
NOT_THERE = frozenset({404, 405, 501})
"""Statuses that say the API is not at that path, whatever the body."""


def not_the_api(url: EndpointUrl, key: str | None,
                ask_seconds: float = CHECK_SECONDS) -> str | None:
    """What answered the question of `url`'s API instead of that API ("POST …/v1/messages
    answered HTTP 501 (text/html, …), not JSON"), None when the API answered or nothing did
    (`unreachable` says so), or for an API the agent cannot use (its plan refuses that).
    The Anthropic question is an empty Messages request: a Messages server refuses it with
    a JSON error before any model runs."""
    if url.api is None:
        return None
    question = QUESTIONS[url.api]
    asked = url.base.rstrip("/") + question.path
    answer = Asker(url.base, url.api, key, ask_seconds).ask(
        asked, {} if question.method == "POST" else None, keyed=True)
    if answer is None or (answer.json is not None and answer.status not in NOT_THERE):
        return None
    body = "not JSON" if answer.json is None else "the API is not there"
    return f"{question.method} {without_userinfo(asked)} answered {answer.shown()}, {body}"
