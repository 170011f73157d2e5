"""`amux ui`: the local page for the memory (docs/ui.md).

A loopback-only HTTP server, started per user, that acts as that user through the Hub
(`page.py`), renders memory as untrusted data (`render.py`), and answers nothing but
its static shell without the per-start key (`server.py`); `control.py` starts, reuses
and stops it.
"""
