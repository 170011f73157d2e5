"""The Hub: the one online writer of a memory root (SPEC §2–4).

`server` (the process: listeners in verified directories, pid file, owner
credential, signals), `loop` and `http` (one event loop over every listener, h11
framing, caps before authentication), `api` (authenticate, recompute the scope,
check bindings, Appendix A errors), `identities`, `config`, `control` (start,
stop, status, on-demand start), `sockdir`, `pidfile`, `paths`. Imports
`amux.memory`; never launches or knows agents. docs/hub.md, docs/security.md.
"""
