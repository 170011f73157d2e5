"""The launcher (`amux run`, `amux sessions`): resolves and freezes a memory binding,
writes the session start state, wires a delegated token into a run directory,
applies an adapter's launch plan, supervises the agent and cleans up (SPEC §6).

`run` (the launch), `wiring` (binding, tokens, run-directory config), `state`
(frozen sessions), `supervise`, `rundirs` (leftover runs), `planfiles` (files a
plan writes), `probe` (what adapters' hooks read), `session_watch` (watching an
agent's own session files). docs/launcher.md.
"""
