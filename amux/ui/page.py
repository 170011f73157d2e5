"""What the page may ask, by table: each operation's fields and the Hub calls that answer it.

The page acts as the user who started `amux ui`, through the Hub, with that user's own
connection (the local default, or AMUX_MEMORY_CONFIG / AMUX_HUB as the page's process
found them): never with more. The
Hub's owner reaches every scope through the owner-only `/v1/admin/*` endpoints; any other
principal reaches its own scope only, through `/v1/memory/*`, and the Hub refuses the rest.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, NamedTuple

from amux.client.read import read_pages
from amux.client.transport import hub_client
from amux.errors import Forbidden, InvalidArgument
from amux.hub.api import check_fields
from amux.memory import conflicts
from amux.ui import render

LOG_PAGE = 100
"""Changes per page of a timeline."""
LIST_LIMIT = 1000
"""Documents the tree shows at once (the Hub's maximum); a folder narrows it."""
WAIT_SECONDS = 20.0
"""How long a live wait holds before it answers "nothing new" (the page asks again)."""
WAIT_POLL_SECONDS = 0.5


class Page:
    """The page's view of the Hub for one user: whose it is, and one call per request."""

    def __init__(self, start_hub: Callable[[], object] | None = None,
                 clock: Callable[[], float] = time.monotonic,
                 wait_seconds: float = WAIT_SECONDS) -> None:
        self._start_hub = start_hub
        self._owner: bool | None = None
        self._clock = clock
        self._wait_seconds = wait_seconds

    def hub(self, path: str, body: dict[str, Any]) -> Any:
        """One Hub call, over the user's own connection (`hub_client`: the local default's
        Hub is started again if it stopped, as `amux memory` does)."""
        with hub_client(self._start_hub) as client:
            return client.call(path, body)

    @property
    def owner(self) -> bool:
        """Whether this user is the Hub's owner (its admin endpoints answer it)."""
        if self._owner is None:
            try:
                self.hub("/v1/admin/scopes", {})
                self._owner = True
            except Forbidden:
                self._owner = False
        return self._owner

    def memory(self, scope: str | None, operation: str, body: dict[str, Any]) -> Any:
        """One memory operation in `scope` (None: the caller's own)."""
        if self.owner:
            named = {} if scope is None else {"binding": scope}
            return self.hub("/v1/admin/memory", {"operation": operation, **named, **body})
        return self.hub(f"/v1/memory/{operation}", body)

    def read(self, scope: str | None, path: str) -> dict[str, Any]:
        """A whole document (every page of `get`, one version), or `{"exists": false}`."""
        found = read_pages(lambda body: self.memory(scope, "get", body), path)
        if found is None:
            return {"path": path, "exists": False}
        content, first = found
        return {key: first[key] for key in ("path", "exists", "revision", "modified_at",
                                             "stale_note")} | {"content": content}

    def wait(self, scope: str | None, after: str | None) -> dict[str, Any]:
        """The scope's newest change once it is not `after`; `after` itself when nothing
        changed for `wait_seconds` (the page then asks again)."""
        deadline = self._clock() + self._wait_seconds
        while True:
            changes = self.memory(scope, "log", {"limit": 1})["changes"]
            head = changes[0]["commit"] if changes else None
            if head != after or self._clock() >= deadline:
                return {"head": head, "change": changes[0] if changes else None}
            time.sleep(WAIT_POLL_SECONDS)


Handler = Callable[[Page, dict[str, Any]], Any]


class Operation(NamedTuple):
    """One thing the page may ask: its fields and what answers it."""

    required: frozenset[str]
    optional: frozenset[str]
    run: Handler


def _me(page: Page, body: dict[str, Any]) -> Any:
    """Who the page acts as, the scopes it may see, and the Hub's state."""
    status = page.hub("/v1/status", {})
    if page.owner:
        scopes = page.hub("/v1/admin/scopes", {})["scopes"]
        owner = next(entry["principal"] for entry in page.hub(
            "/v1/admin/principals", {"action": "list"})["principals"] if entry["owner"])
        own = next((scope["binding"] for scope in scopes if scope["principal"] == owner),
                   "global")  # where the owner's own agents write: global unless isolated
    else:
        binding = page.hub("/v1/binding", {}) if status["memory_enabled"] else None
        scopes = [{"binding": binding["binding"] if binding else None,
                   "principal": binding["principal"] if binding else None}]
        own = scopes[0]["binding"]
    return {"owner": page.owner, "memory_enabled": status["memory_enabled"],
            "isolation_enabled": status["isolation_enabled"], "version": status["version"],
            "scopes": scopes, "own_scope": own}


def _list(page: Page, body: dict[str, Any]) -> Any:
    fields = {"limit": LIST_LIMIT, "changed": True} | _given(body, "path_prefix")
    listing = page.memory(body.get("scope"), "list", fields)
    for document in listing["documents"]:
        original = conflicts.original_of(document["path"])
        if original is not None:
            document["conflict_of"] = original  # a sync's conflict copy, marked in the tree
    return listing


def _read(page: Page, body: dict[str, Any]) -> Any:
    scope, path = body.get("scope"), body["path"]
    document = page.read(scope, path)
    if not document["exists"]:
        return document
    changes = page.memory(scope, "log", {"path": path, "limit": 1})["changes"]
    answer = (document | render.document(document["content"], path, scope or "")
              | {"changed": changes[0] if changes else None})
    original = conflicts.original_of(path)
    if original is not None:  # a sync's conflict copy: shown beside the text it differs from
        kept = page.read(scope, original)
        answer |= {"conflict_of": original, "original": {
            key: kept[key] for key in ("exists", "revision", "content") if key in kept}}
    return answer


def _search(page: Page, body: dict[str, Any]) -> Any:
    return page.memory(body.get("scope"), "search",
                       {"query": body["query"]} | _given(body, "path_prefix"))


def _log(page: Page, body: dict[str, Any]) -> Any:
    fields = {"limit": LOG_PAGE} | _given(body, "path", "session", "before")
    return page.memory(body.get("scope"), "log", fields)


def _version(page: Page, body: dict[str, Any]) -> Any:
    scope, path = body.get("scope"), body["path"]
    answer = page.memory(scope, "version", {"path": path, "revision": body["revision"]})
    return answer | render.document(answer["content"], path, scope or "")


def _diff(page: Page, body: dict[str, Any]) -> Any:
    return page.memory(body.get("scope"), "diff", {"path": body["path"]}
                       | _given(body, "from_revision", "to_revision"))


def _save(page: Page, body: dict[str, Any]) -> Any:
    return page.memory(body.get("scope"), "upsert", _given(
        body, "path", "content", "expected_revision"))


def _forget(page: Page, body: dict[str, Any]) -> Any:
    return page.memory(body.get("scope"), "forget", _given(body, "path", "expected_revision"))


def _restore(page: Page, body: dict[str, Any]) -> Any:
    return page.memory(body.get("scope"), "restore",
                       _given(body, "path", "revision", "expected_revision"))


def _purge(page: Page, body: dict[str, Any]) -> Any:
    """Erase from history (owner only): one version, or all of a document's past."""
    named = {} if body.get("scope") is None else {"binding": body["scope"]}
    return page.hub("/v1/admin/history", {"action": "purge", **named}
                    | _given(body, "path", "revision"))


def _doctor(page: Page, body: dict[str, Any]) -> Any:
    return page.memory(body.get("scope"), "doctor", {})


def _status(page: Page, body: dict[str, Any]) -> Any:
    return page.hub("/v1/status", {})


def _switch(page: Page, body: dict[str, Any]) -> Any:
    """Memory on or off for every agent (owner only): `memory.enabled`, as
    `amux system config set memory.enabled` sets it."""
    enabled = body["enabled"]
    if not isinstance(enabled, bool):
        raise InvalidArgument("enabled must be true or false")
    return page.hub("/v1/admin/config", {"action": "set", "key": "memory.enabled",
                                          "value": "true" if enabled else "false"})


def _wait(page: Page, body: dict[str, Any]) -> Any:
    return page.wait(body.get("scope"), body.get("after"))


def _given(body: dict[str, Any], *keys: str) -> dict[str, Any]:
    return {key: body[key] for key in keys if body.get(key) is not None}


def _fields(*names: str) -> frozenset[str]:
    return frozenset(names)


SCOPED = _fields("scope")

OPERATIONS: dict[str, Operation] = {
    "me": Operation(_fields(), _fields(), _me),
    "status": Operation(_fields(), _fields(), _status),
    "list": Operation(_fields(), SCOPED | {"path_prefix"}, _list),
    "read": Operation(_fields("path"), SCOPED, _read),
    "search": Operation(_fields("query"), SCOPED | {"path_prefix"}, _search),
    "log": Operation(_fields(), SCOPED | {"path", "session", "before"}, _log),
    "version": Operation(_fields("path", "revision"), SCOPED, _version),
    "diff": Operation(_fields("path"), SCOPED | {"from_revision", "to_revision"}, _diff),
    "save": Operation(_fields("path", "content", "expected_revision"), SCOPED, _save),
    "forget": Operation(_fields("path", "expected_revision"), SCOPED, _forget),
    "restore": Operation(_fields("path", "revision", "expected_revision"), SCOPED, _restore),
    "purge": Operation(_fields("path"), SCOPED | {"revision"}, _purge),
    "doctor": Operation(_fields(), SCOPED, _doctor),
    "switch": Operation(_fields("enabled"), _fields(), _switch),
    "wait": Operation(_fields(), SCOPED | {"after"}, _wait),
}
"""Everything the page may ask (`POST /api/<name>`); the server refuses any other name."""


def answer(page: Page, name: str, body: dict[str, Any]) -> Any:
    """Run operation `name` with `body`, its fields checked first."""
    operation = OPERATIONS.get(name)
    if operation is None:
        raise InvalidArgument(f"the page has no operation {name!r}")
    check_fields(name, body, operation.required, operation.optional)
    scope = body.get("scope")
    if scope is not None and not isinstance(scope, str):
        raise InvalidArgument("scope must be a binding string")
    return operation.run(page, body)
