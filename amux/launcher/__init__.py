"""The launcher (`amux run`, `amux sessions`): resolves and freezes a memory binding,
writes the session start state, wires a delegated token into a run directory,
applies an adapter's launch plan, supervises the agent and cleans up (SPEC §6).

`run` (the launch), `wiring` (the binding, delegated tokens, their revocation),
`rundirs` (run directories, plain or isolated: the connection config, a dead launcher's
leftovers), `state` (frozen sessions), `supervise`, `planfiles` and `mirrors` (the files
and directories a plan gives the agent), `probe` (what adapters' hooks read),
`userfiles` and `readfile` (the files of the user the agent runs as, read and written
safely), `session_watch` (learning an agent's own session name from its files),
`endpoints` (whether `--endpoint` answers), `window` (whether the model's context window
holds the agent's first request). docs/launcher.md.
"""
