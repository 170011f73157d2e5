"""The Hub daemon: the one online writer of a memory root (SPEC §2–4).

Built so far (issue 3 in progress): `config` (config.toml) and `identities`
(principals, aliases, hashed tokens, delegated bindings). Still to come: the
HTTP/1.1 JSON server on the owner socket, shared socket and TLS listener, and the
request layer that authenticates, resolves scopes and maps `amux.memory.errors`
to HTTP statuses. Imports `amux.memory`; never launches or knows agents.
"""
