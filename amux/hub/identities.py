"""Principals, aliases, tokens and delegated bindings (SPEC §4).

The registry lives in `<AMUX_HOME>/identities.json` (0600), written with the one
temp-and-replace helper by every change before the change takes effect (SPEC §4:
durable first), and is owned by the Hub process: a change made through the Hub
applies to the next request at once. A change that cannot be saved (disk full,
read-only) fails with `storage_unavailable` and changes nothing.

- A principal's id is the name given to `add` (immutable); aliases are further
  login names of the same principal and resolve to it.
- Tokens are `amux_` + 256 random bits (URL-safe base64). Only their SHA-256
  digest is stored, with a short token id used to list and revoke them; the
  token itself is returned once, by the call that issues it, and never logged.
- A delegated token carries the binding (`global` or `principal:<sha256>`) a
  managed session was frozen to, and usually a TTL. `check_binding` refuses a
  call whose recomputed scope differs from it (`binding_mismatch`).

Who may call which operation is the Hub's business, not the registry's (the
owner changes identities; any principal's login token may delegate to itself
and revoke its own delegated tokens: `amux.hub.api`).
"""

from __future__ import annotations

import base64
import copy
import hashlib
import json
import re
import secrets
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from amux.durable import write_file_atomic
from amux.errors import BindingMismatch, InvalidArgument, Unauthenticated
from amux.faults import storage_faults
from amux.memory.scope import PRINCIPAL_ID, Scope

IDENTITIES_NAME = "identities.json"
TOKEN_PREFIX = "amux_"
_TOKEN_SHAPE = re.compile(r"amux_[A-Za-z0-9_-]{43}")
_BINDING = re.compile(r"global|principal:[0-9a-f]{64}")
LOGIN = "login"
DELEGATED = "delegated"
SELF_DELEGATE_TTL_DEFAULT = 86400.0
"""Seconds a self-delegated token (`POST /v1/delegate`) lives when the caller names no TTL."""
SELF_DELEGATE_TTL_MAX = 7 * 86400.0
"""The longest TTL a principal may give its own delegated token (the launcher asks for it:
the token is revoked when the agent exits, so the TTL is only a backstop)."""


@dataclass(frozen=True)
class IssuedToken:
    """A token as issued: the only time the secret is ever available."""

    principal: str
    token: str
    token_id: str
    binding: str | None = None
    expires_at: float | None = None
    """When a delegated token expires (Unix seconds; None: never)."""

    def to_wire(self) -> dict[str, str]:
        return {"principal": self.principal, "token": self.token, "token_id": self.token_id}


@dataclass(frozen=True)
class Credential:
    """Who an authenticated token speaks for, and the binding it carries (if delegated)."""

    principal: str
    token_id: str
    kind: str
    binding: str | None
    agent: str | None = None
    """For a launched agent's delegated token: the agent's name and amux session id, which
    its launcher gave when it delegated (memory history records them with each change)."""
    session: str | None = None


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def check_name(name: object, what: str = "principal") -> str:
    """Validate a principal id or alias: `[a-z0-9][a-z0-9._-]{0,63}`."""
    if not isinstance(name, str) or not PRINCIPAL_ID.fullmatch(name):
        raise InvalidArgument(
            f"{what} name {name!r} is invalid: use 1-64 of a-z 0-9 . _ - starting with a "
            "letter or digit"
        )
    return name


def check_binding_value(binding: object) -> str:
    """Validate a binding string: `global` or `principal:<sha256 hex>`."""
    if not isinstance(binding, str) or not _BINDING.fullmatch(binding):
        raise InvalidArgument(
            f"binding {binding!r} is invalid: it is 'global' or 'principal:<sha256 hex>'"
        )
    return binding


def check_binding(credential: Credential, scope: Scope, declared: str | None = None) -> None:
    """Refuse a call whose recomputed scope differs from a delegated or declared binding."""
    sources = ((credential.binding, "this delegated token"), (declared, "the request"))
    for binding, source in sources:
        if binding is not None and binding != scope.binding:
            raise BindingMismatch(
                f"{source} is bound to {binding} but the caller's scope is now "
                f"{scope.binding} (the isolation policy or identity changed): start a new session"
            )


@dataclass
class _State:
    """Everything `identities.json` holds; a change edits a copy (see `Registry._change`)."""

    owner: str | None = None
    principals: dict[str, dict[str, Any]] = field(default_factory=dict)
    tokens: dict[str, dict[str, Any]] = field(default_factory=dict)

    def copy(self) -> _State:
        return _State(self.owner, copy.deepcopy(self.principals), copy.deepcopy(self.tokens))

    def resolve(self, name: str) -> str:
        if name in self.principals:
            return name
        for principal, entry in self.principals.items():
            if name in entry["aliases"]:
                return principal
        raise InvalidArgument(f"no principal or alias named {name!r}")

    def name_taken(self, name: str) -> bool:
        return any(
            name == principal or name in entry["aliases"]
            for principal, entry in self.principals.items()
        )

    def live(self, now: float) -> dict[str, dict[str, Any]]:
        """The tokens that have not expired."""
        return {token_id: entry for token_id, entry in self.tokens.items()
                if entry["expires_at"] is None or entry["expires_at"] > now}


class Registry:
    """The identities of one Hub, persisted in `identities.json`. Safe for many threads.

    Every change is made on a copy of the state, saved, and only then made current
    (`_change`): a save that fails (a full or read-only disk: `StorageUnavailable`)
    changes nothing, so what a running Hub accepts is always what a restarted one
    would, and a revocation is never in force only until the next restart.
    """

    def __init__(self, home: Path, clock: Callable[[], float] = time.time) -> None:
        self.path = home / IDENTITIES_NAME
        self.clock = clock
        self._lock = threading.Lock()
        self._state = _State()
        self._by_digest: dict[str, str] = {}
        self._load()

    @property
    def owner(self) -> str | None:
        return self._state.owner

    # -- persistence -------------------------------------------------------------

    def _load(self) -> None:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return
        except (OSError, ValueError) as exc:
            raise InvalidArgument(f"{self.path} cannot be read: {exc}") from None
        if not isinstance(data, dict) or data.get("version") != 1:
            found = data.get("version") if isinstance(data, dict) else type(data).__name__
            raise InvalidArgument(f"{self.path}: not an identities file (version {found!r})")
        self._use(_State(data.get("owner"), data.get("principals", {}), data.get("tokens", {})))

    def _use(self, state: _State) -> None:
        self._state = state
        self._by_digest = {entry["digest"]: token_id for token_id, entry in state.tokens.items()}

    @contextmanager
    def _change(self) -> Iterator[_State]:
        """A copy of the state (expired tokens pruned) to change in the block; when the
        block ends it is saved and then made current. Call with `_lock` held."""
        draft = self._state.copy()
        draft.tokens = draft.live(self.clock())
        yield draft
        data = {"version": 1, "owner": draft.owner, "principals": draft.principals,
                "tokens": draft.tokens}
        text = json.dumps(data, indent=2, sort_keys=True) + "\n"
        with storage_faults(self.path):
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            write_file_atomic(self.path, text.encode("utf-8"))
        self._use(draft)

    # -- lookups -----------------------------------------------------------------

    def resolve(self, name: str) -> str:
        """The principal id a name (id or alias) belongs to."""
        with self._lock:
            return self._state.resolve(name)

    def listing(self) -> list[dict[str, Any]]:
        """Principals with their aliases and live tokens (ids, kinds, expiry; no digests)."""
        with self._lock:
            state = self._state
            live = state.live(self.clock())
            listing = []
            for principal in sorted(state.principals):
                tokens = [
                    {"token_id": token_id, "kind": entry["kind"], "binding": entry["binding"],
                     "expires_at": entry["expires_at"]}
                    for token_id, entry in sorted(live.items())
                    if entry["principal"] == principal
                ]
                listing.append({
                    "principal": principal,
                    "owner": principal == state.owner,
                    "aliases": sorted(state.principals[principal]["aliases"]),
                    "tokens": tokens,
                })
            return listing

    def authenticate(self, token: object) -> Credential:
        """The credential a presented token stands for; anything else is `unauthenticated`."""
        if not isinstance(token, str) or not _TOKEN_SHAPE.fullmatch(token):
            raise Unauthenticated("missing or malformed token")
        with self._lock:
            token_id = self._by_digest.get(_digest(token))
            entry = self._state.tokens.get(token_id) if token_id is not None else None
            if entry is None or token_id is None:
                raise Unauthenticated("unknown or revoked token")
            expires = entry["expires_at"]
            if expires is not None and expires <= self.clock():
                raise Unauthenticated(f"token {token_id} expired")
            return Credential(entry["principal"], token_id, entry["kind"], entry["binding"],
                              entry.get("agent"), entry.get("session"))

    # -- changes -----------------------------------------------------------------

    def ensure_owner(self, name: str) -> IssuedToken | None:
        """Create the owner principal and its first token on first start (else None)."""
        check_name(name)
        with self._lock:
            if self._state.owner is not None:
                return None
            with self._change() as draft:
                draft.principals.setdefault(name, {"aliases": [], "created_at": self.clock()})
                draft.owner = name
                return self._issue(draft, name, LOGIN, None, None)

    def add(self, name: str) -> IssuedToken:
        """A new principal (its id is `name`, forever) and its first token."""
        check_name(name)
        with self._lock, self._change() as draft:
            if draft.name_taken(name):
                raise InvalidArgument(f"{name!r} is already a principal or an alias")
            draft.principals[name] = {"aliases": [], "created_at": self.clock()}
            return self._issue(draft, name, LOGIN, None, None)

    def alias(self, name: str, alias: str) -> str:
        """Make `alias` another login name of `name`'s principal; returns the principal."""
        check_name(alias, "alias")
        with self._lock, self._change() as draft:
            principal = draft.resolve(name)
            if draft.name_taken(alias):
                raise InvalidArgument(f"{alias!r} is already a principal or an alias")
            draft.principals[principal]["aliases"].append(alias)
            return principal

    def issue_token(self, name: str) -> IssuedToken:
        """One more login token for `name`'s principal."""
        with self._lock, self._change() as draft:
            return self._issue(draft, draft.resolve(name), LOGIN, None, None)

    def delegate(self, name: str, binding: str, ttl: float | None, agent: str | None = None,
                 session: str | None = None) -> IssuedToken:
        """A delegated token for `name`'s principal, bound to `binding`, expiring after `ttl` s,
        for the agent `agent` of amux session `session` when a launcher names them."""
        check_binding_value(binding)
        if ttl is not None and (
            isinstance(ttl, bool) or not isinstance(ttl, int | float) or not ttl > 0
        ):
            raise InvalidArgument(f"ttl must be a positive number of seconds, got {ttl!r}")
        with self._lock, self._change() as draft:
            expires = None if ttl is None else self.clock() + ttl
            issued = self._issue(draft, draft.resolve(name), DELEGATED, binding, expires)
            draft.tokens[issued.token_id].update(
                {key: value for key, value in (("agent", agent), ("session", session))
                 if value is not None})
            return issued

    def revoke_delegated(self, principal: str, token_id: object) -> str:
        """Revoke one delegated token of `principal` (by its id); anything else, another
        principal's token or a login token included, is `invalid_argument`, which tells a
        caller nothing about tokens that are not its own."""
        if not isinstance(token_id, str):
            raise InvalidArgument("token_id must be a string")
        with self._lock, self._change() as draft:
            entry = draft.tokens.get(token_id)
            if entry is None or entry["principal"] != principal or entry["kind"] != DELEGATED:
                raise InvalidArgument(f"{principal} has no delegated token {token_id!r}")
            del draft.tokens[token_id]
            return token_id

    def revoke(self, name: str, token_id: str | None = None) -> list[str]:
        """Revoke one token of `name`'s principal, or all of them when `token_id` is None."""
        with self._lock, self._change() as draft:
            principal = draft.resolve(name)
            owned = [tid for tid, entry in draft.tokens.items() if entry["principal"] == principal]
            if token_id is not None:
                if token_id not in owned:
                    raise InvalidArgument(f"{principal} has no token {token_id!r}")
                owned = [token_id]
            for tid in owned:
                del draft.tokens[tid]
            return sorted(owned)

    def _issue(self, draft: _State, principal: str, kind: str, binding: str | None,
               expires: float | None) -> IssuedToken:
        token = TOKEN_PREFIX + base64.urlsafe_b64encode(secrets.token_bytes(32)).decode()[:43]
        token_id = secrets.token_hex(6)
        draft.tokens[token_id] = {
            "principal": principal, "digest": _digest(token), "kind": kind, "binding": binding,
            "created_at": self.clock(), "expires_at": expires,
        }
        return IssuedToken(principal, token, token_id, binding, expires)
