"""The `amux` command: a thin layer that imports heavy parts lazily."""
