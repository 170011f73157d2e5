"""Whether a model endpoint answers, asked before an agent is started against it.

An agent pointed at a server that is down does not say so: Codex reconnects for minutes,
Claude retries for two, Pi fails after twenty seconds, and each ends with a message about
something else. So `amux run --endpoint` (and the resume of such a session) first asks the
endpoint's host for anything (any HTTP answer, even an error status, means a server is
there) within `CHECK_SECONDS`, and refuses with one line naming the URL and the fix when
nothing answers. `amux eval live` asks the same, with its own patience.
"""

from __future__ import annotations

import urllib.error
import urllib.request
from urllib.parse import urlsplit

CHECK_SECONDS = 2.5


def root(base_url: str) -> str:
    """The endpoint's scheme and host (`http://127.0.0.1:11434`)."""
    parts = urlsplit(base_url)
    return f"{parts.scheme}://{parts.netloc}"


def unreachable(base_url: str, timeout: float = CHECK_SECONDS) -> str | None:
    """Why nothing answers at the endpoint's host, or None. Environment proxies apply,
    as they do in the agent's run."""
    try:
        with urllib.request.urlopen(root(base_url) + "/", timeout=timeout):
            return None
    except urllib.error.HTTPError:
        return None
    except (urllib.error.URLError, OSError, ValueError) as error:
        reason = getattr(error, "reason", error)
        if isinstance(reason, TimeoutError) or "timed out" in str(reason):
            reason = f"no answer within {timeout:g} s"
        return f"nothing answers at {root(base_url)} ({reason})"
