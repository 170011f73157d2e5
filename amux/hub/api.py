"""The Hub's request layer, independent of the HTTP server that carries it.

Every request is authenticated by its bearer token, the scope is recomputed from
the authenticated principal and the isolation policy on every call, delegated or
declared bindings are checked against it, and errors come back as the JSON of
SPEC Appendix A with the status from `amux.errors.ERROR_TABLE`. The HTTP
layer (`amux.hub.loop`, `amux.hub.http`) only turns bytes into a `Request` and a
`Response` back into bytes.

Endpoints (all JSON bodies; `Authorization: Bearer <token>`; an optional
`X-Amux-Binding` header declares the binding a managed session was frozen to):

    POST /v1/memory/search   {query, path_prefix?, limit?}
    POST /v1/memory/get      {path, start_line?, end_line?, offset?}
    POST /v1/memory/upsert   {path, content, expected_revision, source?, dry_run?}
                             (`source`: an import's provenance, kept in history;
                             `dry_run`: every check, no write)
    POST /v1/memory/forget   {path, expected_revision}
    POST /v1/memory/list     {path_prefix?, limit?, changed?, after?}  -> {documents: [{path,
                             bytes, revision, modified_at, changed?: {at, operation,
                             principal, agent, session} | null}], truncated}  (for people;
                             `changed: true` adds who made each current content)
    POST /v1/memory/doctor   {}  -> read-only health report of the scope (amux.memory.health)
    POST /v1/memory/log      {path?, since?, limit?, before?, session?}  -> {changes: [{at,
                             path, operation, revision, bytes, principal, agent, session,
                             commit}], more}, newest first; `before`: a commit of an earlier
                             answer (the next page)                  (history, for people)
    POST /v1/memory/version  {path, revision}  -> {path, revision, content}: a past version
    POST /v1/memory/diff     {path, from_revision?, to_revision?}  -> {path, from_revision,
                             to_revision, diff}: unified diff (default: the previous
                             version against the current)
    POST /v1/memory/restore  {path, revision, expected_revision}  -> as upsert, plus
                             restored_from: a conditional write of that version
    POST /v1/memory/remotes  {action: add|remove|list, name?, url?}: the caller's scope's
                             sync remotes (login tokens only)      (amux.hub.sync)
    POST /v1/memory/sync     {remote?, dry_run?}  -> {remote, applied, conflicts,
                             kept_edits, refused, changed_meanwhile, pushed, ...}: the
                             caller's scope merged with its remote (login tokens only)
    POST /v1/binding         {}  -> {principal, binding}   (what a launcher freezes)
    POST /v1/delegate        {ttl?, binding?, agent?, session?}  -> {principal, token,
                             token_id, binding, expires_at}: a delegated token of the
                             caller's own principal, bound to its scope now (`binding`: the
                             one the caller expects, else binding_mismatch; `agent`,
                             `session`: the launched agent's, which history records with its
                             changes); login tokens only, any listener
    POST /v1/revoke          {token_id}  -> {principal, revoked: [token_id]}: one of the
                             caller's own delegated tokens; login tokens only, any listener
    POST /v1/status          {}  -> hub status (SPEC Appendix A)
    POST /v1/admin/reload    {}  re-read config.toml                  owner only
    POST /v1/admin/config    {action: get|set, key, value?}          owner only
    POST /v1/admin/principals {action: add|alias|token|revoke|delegate|binding|list, ...}
                                                                     owner only
    POST /v1/admin/history   {action: log|purge, path?, revision?, since?, limit?, before?,
                             session?, principal? | binding?}: any scope's history (default: the
                             owner's own scope); purge removes a version, or all of a
                             document's past but its current content     owner only
    POST /v1/admin/secrets   {action: allow|remove|list, fingerprint?, principal? | binding?}
                             a scope's secret-guard allow list (default: the owner's
                             own scope)                                 owner only
    POST /v1/admin/memory    {operation, principal? | binding?, ...the operation's fields}:
                             one memory operation in any scope (default: the owner's own),
                             whether memory is on or off               owner only
    POST /v1/admin/scopes    {}  -> {isolation, scopes: [{binding, principal, exists}]}: the
                             scopes /v1/admin/memory opens              owner only
"""

from __future__ import annotations

import difflib
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from amux.encoding import encode
from amux.errors import (
    AmuxError,
    Forbidden,
    InternalError,
    InvalidArgument,
    MemoryDisabled,
    NotFound,
    NotUtf8,
    shown,
)
from amux.faults import storage_faults
from amux.hub.config import ConfigFile, HubConfig
from amux.hub.identities import (
    LOGIN,
    SELF_DELEGATE_TTL_DEFAULT,
    SELF_DELEGATE_TTL_MAX,
    Credential,
    Registry,
    check_binding,
    check_binding_value,
    check_name,
)
from amux.memory.scope import GLOBAL, Identity, Scope, resolve_scope
from amux.memory.store import Store
from amux.memory.versions import Author, check_label
from amux.typing_light import NamedTuple

log = logging.getLogger("amux.hub")

MemoryHandler = Callable[["HubApi", Scope, dict[str, Any], Author], Any]
"""What answers one memory operation: the Hub, the caller's scope, the checked body, and
who is asking (history records it with a change)."""


class MemoryOperation(NamedTuple):
    """One memory operation of SPEC Appendix A: its fields and what answers it."""

    required: frozenset[str]
    optional: frozenset[str]
    run: MemoryHandler


@dataclass(frozen=True)
class Request:
    """What the HTTP layer hands over: the route, the credentials and the raw body."""

    method: str
    path: str
    body: bytes = b""
    token: str | None = None
    binding: str | None = None
    owner_socket: bool = False
    """Arrived on the owner's private socket (the only place identities change)."""


@dataclass(frozen=True)
class Response:
    status: int
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


def _ok(value: Any) -> Response:
    return Response(200, encode(value))


def _error(error: AmuxError) -> Response:
    return Response(error.http_status or 500, encode(error.to_wire()))


class HubApi:
    """Answers Hub requests against one store, identity registry and configuration."""

    def __init__(
        self, store: Store, registry: Registry, config: ConfigFile,
        status: Callable[[], dict[str, Any]] | None = None,
    ) -> None:
        self.store = store
        self._status = status
        self.registry = registry
        self.config_file = config
        self.config: HubConfig = config.load()
        self._apply_history_limits()
        self._routes: dict[str, Callable[[Request, Credential, dict[str, Any]], Any]] = {
            "/v1/binding": self._binding,
            "/v1/delegate": self._delegate,
            "/v1/revoke": self._revoke,
            "/v1/status": lambda request, credential, body: self.status(),
            "/v1/admin/reload": self._admin_reload,
            "/v1/admin/config": self._admin_config,
            "/v1/admin/principals": self._admin_principals,
            "/v1/admin/secrets": self._admin_secrets,
            "/v1/admin/history": self._admin_history,
            "/v1/admin/memory": self._admin_memory,
            "/v1/admin/scopes": self._admin_scopes,
            "/v1/memory/remotes": self._remotes,
            "/v1/memory/sync": self._sync,
        }
        from amux.hub.sync import Remotes

        self.remotes = Remotes(store.root.parent)

    def status(self) -> dict[str, Any]:
        """`hub status` (SPEC Appendix A), for any authenticated caller."""
        if self._status is None:
            raise InvalidArgument("this Hub reports no status")
        return self._status()

    def reload(self) -> HubConfig:
        """Re-read config.toml (SIGHUP, `amux hub reload`)."""
        self.config = self.config_file.load()
        self._apply_history_limits()
        return self.config

    def _apply_history_limits(self) -> None:
        history = self.store.history
        if history is not None:
            history.set_limits(self.config.history_max_bytes, self.config.history_keep_seconds)

    def preflight(self, head: Request) -> Response | None:
        """A refusal for a request on its head alone (`head.body` not read yet), else None.

        The HTTP layer asks this before it reads a body, so a caller without a valid
        token gets `unauthenticated` at once and cannot make the Hub hold its bytes.
        `handle` authenticates again: a token revoked in between is refused there.
        """
        try:
            self.registry.authenticate(head.token)
        except AmuxError as error:
            return _error(error)
        return None

    def handle(self, request: Request) -> Response:
        """Answer one request; never raises."""
        try:
            return _ok(self._dispatch(request))
        except AmuxError as error:
            return _error(error)
        except Exception:  # a bug: say so without leaking details to the caller
            log.exception("internal error on %s %s", request.method, request.path)
            return _error(InternalError("internal error in the Hub; see its log"))

    def _dispatch(self, request: Request) -> Any:
        if request.method != "POST":
            raise InvalidArgument(f"{request.method} {request.path}: use POST")
        credential = self.registry.authenticate(request.token)
        body = _parse_body(request.body)
        with storage_faults(self.store.root.parent):  # disk full, read-only: say so, by errno
            return self._route(request, credential, body)

    def _route(self, request: Request, credential: Credential, body: dict[str, Any]) -> Any:
        route = self._routes.get(request.path)
        if route is None and request.path.startswith("/v1/memory/"):
            return self._memory(request, credential, request.path.removeprefix("/v1/memory/"), body)
        if route is None:
            raise InvalidArgument(f"unknown endpoint {request.path}")
        return route(request, credential, body)

    # -- memory ------------------------------------------------------------------

    def _scope(self, request: Request, credential: Credential) -> Scope:
        """The caller's scope, recomputed now; refuses when memory is off or bindings differ."""
        if not self.config.memory_enabled:
            raise MemoryDisabled(
                "memory is disabled on this Hub (memory.enabled = false); files are kept. "
                "The Hub's owner turns it on with: amux system config set memory.enabled true"
            )
        return self._bound_scope(request, credential)

    def _bound_scope(self, request: Request, credential: Credential) -> Scope:
        """The caller's scope now, whether or not memory is on; refuses differing bindings."""
        identity = Identity(credential.principal)
        scope = resolve_scope(identity, isolation=self.config.isolation_enabled)
        check_binding(credential, scope, request.binding)
        return scope

    def _memory(
        self, request: Request, credential: Credential, operation: str, body: dict[str, Any]
    ) -> Any:
        """One memory operation in the caller's own scope, while memory is on."""
        return self._operate(operation, body, credential, frozenset(),
                             lambda: self._scope(request, credential))

    def _operate(self, operation: object, body: dict[str, Any], credential: Credential,
                 also: frozenset[str], scope: Callable[[], Scope]) -> Any:
        """One row of `MEMORY_OPERATIONS`, by the table alone: a name it does not hold is
        refused here, before anything is read or written; then the row's fields (and
        `also`, the endpoint's own), then the row's handler in the scope `scope` gives,
        as the credential's principal (and agent and session)."""
        if not isinstance(operation, str) or (known := MEMORY_OPERATIONS.get(operation)) is None:
            raise InvalidArgument(f"unknown memory operation {shown(operation)}; the Hub "
                                  f"answers {', '.join(MEMORY_OPERATIONS)}")
        check_fields(operation, body, known.required, known.optional | also)
        author = Author(credential.principal, credential.agent, credential.session)
        return known.run(self, scope(), body, author)

    def _search(self, scope: Scope, body: dict[str, Any], author: Author) -> Any:
        return self.store.search(scope, body["query"], body.get("path_prefix"),
                                 body.get("limit"))

    def _get(self, scope: Scope, body: dict[str, Any], author: Author) -> Any:
        return self.store.get(scope, body["path"], body.get("start_line") or 0,
                              body.get("end_line") or 0, body.get("offset"))

    def _upsert(self, scope: Scope, body: dict[str, Any], author: Author) -> Any:
        """An upsert; `source` (an import's provenance) goes into history with the
        change, `dry_run` checks everything and writes nothing (docs/wire.md)."""
        source = check_source(body.get("source"))
        dry_run = body.get("dry_run", False)
        if not isinstance(dry_run, bool):
            raise InvalidArgument(f"dry_run must be true or false, got {shown(dry_run)}")
        return self.store.upsert(scope, body["path"], _text(body["content"]),
                                 body["expected_revision"], author._replace(source=source),
                                 dry_run=dry_run)

    def _forget(self, scope: Scope, body: dict[str, Any], author: Author) -> Any:
        return self.store.forget(scope, body["path"], body["expected_revision"], author)

    def _list(self, scope: Scope, body: dict[str, Any], author: Author) -> Any:
        return self.store.list(scope, body.get("path_prefix"), body.get("limit"),
                               body.get("changed", False), body.get("after"))

    def _doctor(self, scope: Scope, body: dict[str, Any], author: Author) -> Any:
        return self.store.doctor(scope)

    def _log(self, scope: Scope, body: dict[str, Any], author: Author) -> Any:
        """Memory history (docs/store.md "History"), newest first, a page at a time."""
        return self.store.log(scope, body.get("path"), body.get("since"), body.get("limit"),
                              body.get("before"), body.get("session"))

    def _version(self, scope: Scope, body: dict[str, Any], author: Author) -> Any:
        path, revision = body["path"], body["revision"]
        return {"path": path, "revision": revision,
                "content": _history_text(path, revision, self.store.version(scope, path,
                                                                            revision))}

    def _restore(self, scope: Scope, body: dict[str, Any], author: Author) -> Any:
        path = body["path"]
        data = self.store.version(scope, path, body["revision"])
        written = self.store.upsert(scope, path, data, body["expected_revision"], author,
                                    operation="restore")
        return {**written, "restored_from": body["revision"]}

    def _diff(self, scope: Scope, body: dict[str, Any], author: Author) -> Any:
        """A unified diff of two versions; default: the newest change of `path` (its
        previous version against the one after it, `absent` when created or forgotten)."""
        path, old, new = body["path"], body.get("from_revision"), body.get("to_revision")
        if old is None or new is None:
            changes = self.store.log(scope, path, limit=2)["changes"]
            if not changes:
                raise NotFound(f"history has no change of {path}")
            newest = changes[0]["revision"]
            before = changes[1]["revision"] if len(changes) > 1 else "absent"
            if new is None:
                new = newest
            if old is None:
                old = before if new == newest else newest
        texts = [_diff_text(b"" if revision == "absent" else
                            self.store.version(scope, path, revision, field))
                 for revision, field in ((old, "from_revision"), (new, "to_revision"))]
        lines = difflib.unified_diff(
            texts[0][0].splitlines(keepends=True), texts[1][0].splitlines(keepends=True),
            f"a/{path}@{str(old)[:12]}", f"b/{path}@{str(new)[:12]}", texts[0][1],
            texts[1][1])
        return {"path": path, "from_revision": old, "to_revision": new, "diff": "".join(lines)}

    def _binding(self, request: Request, credential: Credential, body: dict[str, Any]) -> Any:
        check_fields("binding", body, frozenset(), frozenset())
        scope = self._scope(request, credential)
        return {"principal": credential.principal, "binding": scope.binding}

    # -- sync through git remotes (docs/sync.md "Sync") ----------------------------

    def _remotes(self, request: Request, credential: Credential, body: dict[str, Any]) -> Any:
        """The caller's own scope's remotes: only its principal's login token changes or
        reads them (an agent's delegated token cannot send memory elsewhere)."""
        self._require_login(credential, "configure sync remotes")
        scope = self._scope(request, credential)
        action = body.get("action")
        if action == "list":
            check_fields("remotes list", body, frozenset({"action"}), frozenset())
            return self.remotes.listing(scope)
        if action == "add":
            check_fields("remotes add", body, frozenset({"action", "name", "url"}), frozenset())
            return self.remotes.add(scope, body["name"], body["url"])
        if action == "remove":
            check_fields("remotes remove", body, frozenset({"action", "name"}), frozenset())
            return self.remotes.remove(scope, body["name"])
        raise InvalidArgument(f"remotes action must be add, remove or list, got "
                              f"{shown(action)}")

    def _sync(self, request: Request, credential: Credential, body: dict[str, Any]) -> Any:
        from amux.hub.sync import sync

        check_fields("sync", body, frozenset(), frozenset({"remote", "dry_run"}))
        self._require_login(credential, "sync memory")
        scope = self._scope(request, credential)
        dry_run = body.get("dry_run", False)
        if not isinstance(dry_run, bool):
            raise InvalidArgument(f"dry_run must be true or false, got {shown(dry_run)}")
        author = Author(credential.principal, credential.agent, credential.session)
        return sync(self.store, scope, self.remotes, body.get("remote"), dry_run, author)

    # -- a principal's own delegated tokens (any listener) ---------------------------

    def _require_login(self, credential: Credential, what: str) -> None:
        if credential.kind != LOGIN:
            raise Forbidden(f"a delegated token cannot {what}: use a login token of "
                            f"{credential.principal}")

    def _delegate(self, request: Request, credential: Credential, body: dict[str, Any]) -> Any:
        """A TTL-limited token of the caller's own principal, bound to its scope now, that
        cannot mint further tokens (SPEC §4): what a launcher gives each agent."""
        check_fields("delegate", body, frozenset(),
                      frozenset({"ttl", "binding", "agent", "session"}))
        self._require_login(credential, "mint further tokens")
        ttl = body.get("ttl", SELF_DELEGATE_TTL_DEFAULT)
        if (isinstance(ttl, bool) or not isinstance(ttl, int | float)
                or not 0 < ttl <= SELF_DELEGATE_TTL_MAX):
            raise InvalidArgument(f"ttl must be a number of seconds above 0 and at most "
                                  f"{SELF_DELEGATE_TTL_MAX:.0f}, got {ttl!r}")
        expected = body.get("binding")
        if expected is not None:
            expected = check_binding_value(expected)
        # Memory may be off: a resumed session's calls then fail with memory_disabled and
        # work again once it is back on (SPEC §3), so its token is issued all the same.
        scope = self._bound_scope(request, credential)
        check_binding(credential, scope, expected)
        agent, session = (check_label(body.get(key), key) for key in ("agent", "session"))
        issued = self.registry.delegate(credential.principal, scope.binding, ttl, agent, session)
        return {**issued.to_wire(), "binding": issued.binding, "expires_at": issued.expires_at}

    def _revoke(self, request: Request, credential: Credential, body: dict[str, Any]) -> Any:
        """Revoke one of the caller's own delegated tokens (never another principal's)."""
        check_fields("revoke", body, frozenset({"token_id"}), frozenset())
        self._require_login(credential, "revoke tokens")
        revoked = self.registry.revoke_delegated(credential.principal, body["token_id"])
        return {"principal": credential.principal, "revoked": [revoked]}

    # -- administration (owner only, over the owner socket) ------------------------

    def _require_owner(self, request: Request, credential: Credential) -> None:
        if (
            not request.owner_socket
            or credential.kind != LOGIN
            or credential.principal != self.registry.owner
        ):
            raise Forbidden(
                "only the Hub's owner, with its own login token over the local owner socket, "
                "may change configuration or identities"
            )

    def _admin_reload(self, request: Request, credential: Credential, body: dict[str, Any]) -> Any:
        self._require_owner(request, credential)
        config = self.reload()
        return {"memory_enabled": config.memory_enabled,
                "isolation_enabled": config.isolation_enabled}

    def _admin_config(self, request: Request, credential: Credential, body: dict[str, Any]) -> Any:
        self._require_owner(request, credential)
        action = body.get("action")
        if action == "get":
            check_fields("config get", body, frozenset({"action", "key"}), frozenset())
            return {"key": body["key"], "value": self.config_file.get(body["key"])}
        if action == "set":
            check_fields("config set", body, frozenset({"action", "key", "value"}), frozenset())
            value = self.config_file.set(body["key"], str(body["value"]))
            self.reload()
            return {"key": body["key"], "value": value}
        raise InvalidArgument(f"config action must be get or set, got {action!r}")

    def _admin_principals(
        self, request: Request, credential: Credential, body: dict[str, Any]
    ) -> Any:
        self._require_owner(request, credential)
        action = body.get("action")
        registry = self.registry
        if action == "list":
            return {"principals": registry.listing()}
        name = check_name(body.get("name"))
        if action == "add":
            return registry.add(name).to_wire()
        if action == "alias":
            return {"principal": registry.alias(name, check_name(body.get("alias"), "alias"))}
        if action == "token":
            return registry.issue_token(name).to_wire()
        if action == "revoke":
            token_id = body.get("token_id")
            if token_id is not None and not isinstance(token_id, str):
                raise InvalidArgument("token_id must be a string")
            if token_id is None and body.get("all") is not True:
                raise InvalidArgument("revoke needs token_id, or all=true to revoke every token")
            return {"principal": registry.resolve(name), "revoked": registry.revoke(name, token_id)}
        if action == "binding":  # read-only: what `delegate` would bind by default
            principal = registry.resolve(name)
            scope = resolve_scope(Identity(principal), isolation=self.config.isolation_enabled)
            return {"principal": principal, "binding": scope.binding}
        if action == "delegate":
            binding = body.get("binding")
            if binding is None:  # default: the scope the principal would use now
                identity = Identity(registry.resolve(name))
                binding = resolve_scope(identity, isolation=self.config.isolation_enabled).binding
            agent, session = (check_label(body.get(key), key) for key in ("agent", "session"))
            return registry.delegate(name, binding, body.get("ttl"), agent, session).to_wire()
        raise InvalidArgument(f"unknown principals action {action!r}")


    def _admin_secrets(self, request: Request, credential: Credential, body: dict[str, Any]) -> Any:
        """The secret guard's per-scope allow list (docs/store.md "Secret guard").

        Owner only, like every other change of what the Hub accepts: an agent holds a
        delegated token of its principal, so letting a scope's own principal allow
        values would let the agent that tried to save a secret wave it through.
        """
        self._require_owner(request, credential)
        action = body.get("action")
        target = frozenset({"principal", "binding"})
        if action == "list":
            check_fields("secrets list", body, frozenset({"action"}), target)
            return self.store.allowed_secrets(self._named_scope(credential, body))
        if action in ("allow", "remove"):
            check_fields(f"secrets {action}", body, frozenset({"action", "fingerprint"}), target)
            scope = self._named_scope(credential, body)
            return self.store.allow_secret(scope, body["fingerprint"], allow=action == "allow")
        raise InvalidArgument(f"secrets action must be allow, remove or list, got {action!r}")

    def _admin_history(self, request: Request, credential: Credential,
                       body: dict[str, Any]) -> Any:
        """Any scope's memory history for the Hub's owner: read it, or purge from it (a
        secret written into a document by hand and removed since)."""
        self._require_owner(request, credential)
        action = body.get("action")
        target = frozenset({"principal", "binding"})
        if action == "log":  # as /v1/admin/memory {"operation": "log"}
            return self._operate("log", body, credential, target | {"action"},
                                 lambda: self._named_scope(credential, body))
        if action == "purge":
            check_fields("history purge", body, frozenset({"action", "path"}),
                          target | {"revision"})
            return self.store.purge_history(self._named_scope(credential, body),
                                            body["path"], body.get("revision"))
        raise InvalidArgument(f"history action must be log or purge, got {action!r}")

    def _admin_memory(self, request: Request, credential: Credential,
                      body: dict[str, Any]) -> Any:
        """Any scope's memory for the Hub's owner: one memory operation (`operation`, with
        its own fields, as `/v1/memory/<operation>` takes them) in the scope `principal`
        or `binding` names (default: the owner's own), recorded in history as the owner's.
        It answers whether memory.enabled is on or off: the owner is looking at their own
        files, and the switch only keeps agents out."""
        self._require_owner(request, credential)
        return self._operate(body.get("operation"), body, credential,
                             frozenset({"operation", "principal", "binding"}),
                             lambda: self._named_scope(credential, body))

    def _admin_scopes(self, request: Request, credential: Credential,
                      body: dict[str, Any]) -> Any:
        """The scopes the owner may open with `/v1/admin/memory`: global, then with
        isolation on each principal's, the owner's first and the others by name; `exists`
        says the scope's folder is there (its first write makes it)."""
        self._require_owner(request, credential)
        check_fields("scopes", body, frozenset(), frozenset())
        isolation = self.config.isolation_enabled
        named: list[tuple[str | None, Scope]] = [(None, GLOBAL)]
        if isolation:
            owner = self.registry.owner
            principals = sorted((entry["principal"] for entry in self.registry.listing()),
                                key=lambda name: (name != owner, name))
            named += [(name, resolve_scope(Identity(name), isolation=True))
                      for name in principals]
        return {"isolation": isolation, "scopes": [
            {"binding": scope.binding, "principal": principal, "exists": self.store.exists(scope)}
            for principal, scope in named]}

    def _named_scope(self, credential: Credential, body: dict[str, Any]) -> Scope:
        """The scope an owner's request names: a principal's current scope, an explicit
        binding, or (neither) the owner's own current scope."""
        if "principal" in body and "binding" in body:
            raise InvalidArgument("name the scope by principal or by binding, not both")
        if "binding" in body:
            binding = check_binding_value(body["binding"])
            if binding == GLOBAL.binding:
                return GLOBAL
            return Scope(binding, ("users", binding.removeprefix("principal:")))
        name = credential.principal
        if "principal" in body:
            name = self.registry.resolve(check_name(body["principal"]))
        return resolve_scope(Identity(name), isolation=self.config.isolation_enabled)


SOURCE_MAX_CHARS = 512
"""The longest `source` an upsert may give (a store's name and a file's path)."""


def check_source(value: object) -> str | None:
    """An upsert's `source` (or None): printable text of 1-512 characters, one line, as it
    becomes a trailer of the history commit (no control character can forge another)."""
    if value is None:
        return None
    if (not isinstance(value, str) or not 0 < len(value) <= SOURCE_MAX_CHARS
            or not value.isprintable()):
        raise InvalidArgument(f"source must be 1-{SOURCE_MAX_CHARS} printable characters on "
                              f"one line, got {shown(value)}")
    return value


MEMORY_OPERATIONS: dict[str, MemoryOperation] = {
    "search": MemoryOperation(frozenset({"query"}), frozenset({"path_prefix", "limit"}),
                              HubApi._search),
    "get": MemoryOperation(frozenset({"path"}), frozenset({"start_line", "end_line", "offset"}),
                           HubApi._get),
    "upsert": MemoryOperation(frozenset({"path", "content", "expected_revision"}),
                              frozenset({"source", "dry_run"}), HubApi._upsert),
    "forget": MemoryOperation(frozenset({"path", "expected_revision"}), frozenset(),
                              HubApi._forget),
    "list": MemoryOperation(frozenset(), frozenset({"path_prefix", "limit", "changed", "after"}),
                            HubApi._list),
    "doctor": MemoryOperation(frozenset(), frozenset(), HubApi._doctor),
    "log": MemoryOperation(frozenset(), frozenset({"path", "since", "limit", "before", "session"}),
                           HubApi._log),
    "version": MemoryOperation(frozenset({"path", "revision"}), frozenset(), HubApi._version),
    "diff": MemoryOperation(frozenset({"path"}), frozenset({"from_revision", "to_revision"}),
                            HubApi._diff),
    "restore": MemoryOperation(frozenset({"path", "revision", "expected_revision"}),
                               frozenset(), HubApi._restore),
}
"""Every memory operation (SPEC Appendix A), its fields and its handler: the Hub answers
these and refuses any other name."""


def _history_text(path: str, revision: str, data: bytes) -> str:
    """A past version as text; `not_utf8` naming the byte for a hand edit that was not
    UTF-8 (history keeps its bytes: a diff shows them, replaced)."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise NotUtf8(f"{path} at revision {revision[:12]} is not valid UTF-8 at byte "
                      f"{exc.start} (edited outside amux); `amux memory diff {path}` shows "
                      "it with such bytes replaced by U+FFFD") from None


def _diff_text(data: bytes) -> tuple[str, str]:
    """A version's text for a diff and what its header says beside its name: for bytes
    that are not UTF-8, which were replaced by U+FFFD."""
    try:
        return data.decode("utf-8"), ""
    except UnicodeDecodeError as exc:
        text = data.decode("utf-8", "replace")
        count = text.count("\ufffd") - data.count("\ufffd".encode())
        return text, (f"not UTF-8: {count} invalid sequence(s) from byte {exc.start} "
                      "shown as U+FFFD")


def _parse_body(body: bytes) -> dict[str, Any]:
    """The JSON object of a request body; anything else is the caller's `invalid_argument`."""
    if not body:
        return {}
    try:
        value = json.loads(body)
    except (UnicodeDecodeError, ValueError) as exc:
        raise InvalidArgument(f"the request body is not UTF-8 JSON: {exc}") from None
    except RecursionError:  # `[[[[…`: the decoder recurses once per level
        raise InvalidArgument("the request body nests JSON too deeply: send a flat "
                              "object of the endpoint's fields") from None
    if not isinstance(value, dict):
        raise InvalidArgument("the request body must be a JSON object")
    return value


def check_fields(
    operation: str, body: dict[str, Any], required: frozenset[str], optional: frozenset[str]
) -> None:
    """Refuse a body missing a required field or carrying one `operation` does not take (a
    typo never passes silently); the Hub's endpoints and the memory page's operations."""
    missing = sorted(required - body.keys())
    if missing:
        raise InvalidArgument(f"{operation} needs {', '.join(missing)}")
    unknown = sorted(body.keys() - required - optional)
    if unknown:
        raise InvalidArgument(f"{operation} does not take {', '.join(unknown)}")


def _text(content: object) -> str:
    if not isinstance(content, str):
        raise InvalidArgument("content must be a string of UTF-8 Markdown")
    return content
