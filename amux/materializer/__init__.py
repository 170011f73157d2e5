"""Isolated launches as another Unix user (`amux run --as-user`): the target user and
the environment its agent starts from (`target`). Its run directory, with the client
copy and the connection config the target owns, is `amux.launcher.rundirs`'. See
docs/isolation.md."""
