"""Isolated launches as another Unix user (`amux run --as-user`): the target and its
environment (`target`), and the run directory holding the single-file client copy and a
0600 connection config owned by the target (`rundir`). See docs/isolation.md."""
