"""The Hub's request layer (`HubApi`) on a real store, registry and config in a directory,
called without a socket: what the API tests of the Hub drive."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from amux.hub.api import HubApi, Request, Response
from amux.hub.config import ConfigFile
from amux.hub.identities import Registry
from amux.memory import Store
from amux.memory.versions import VersionStore


class ApiHub:
    """A HubApi with an owner, alice and bob, memory on (and `history`, when given), and
    helpers to call it."""

    def __init__(self, home: Path, history: VersionStore | None = None) -> None:
        self.config = ConfigFile(home)
        self.config.set("memory.enabled", "true")
        self.registry = Registry(home)
        owner = self.registry.ensure_owner("owner")
        assert owner is not None
        self.owner = owner.token
        self.alice = self.registry.add("alice").token
        self.bob = self.registry.add("bob").token
        self.store = Store(home / "memory", history=history)
        self.api = HubApi(self.store, self.registry, self.config)

    def call(self, path: str, token: str | None, body: object = None, *,
             binding: str | None = None, owner_socket: bool = False) -> Response:
        raw = b"" if body is None else json.dumps(body).encode()
        return self.api.handle(Request("POST", path, raw, token, binding, owner_socket))

    def admin(self, path: str, body: Mapping[str, object]) -> Response:
        return self.call(path, self.owner, body, owner_socket=True)

    def isolate(self, on: bool) -> None:
        assert self.admin("/v1/admin/config", {
            "action": "set", "key": "isolation.enabled", "value": str(on).lower(),
        }).status == 200
