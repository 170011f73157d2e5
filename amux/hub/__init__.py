"""The Hub daemon: the one online writer of a memory root (SPEC §2–4).

Not built yet (issue 3): HTTP/1.1 JSON over the owner socket, identities, scopes
and bindings, mapping `amux.memory.errors` to HTTP statuses. Imports `amux.memory`.
"""
