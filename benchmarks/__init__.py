"""Benchmarks for the amux memory store: `python -m benchmarks` (see README.md).

Not part of the installed package (setuptools only packages `amux*`); run from the
repository root. Standard library only, plus `rg` as the search floor.
"""
