"""Entry point of the `amux` console script.

The Hub and the memory commands of SPEC §3 are not built yet (issue 3); until then
the command only reports its version and points at the benchmarks.
"""

from __future__ import annotations

import argparse

from amux import __version__


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="amux",
        description=(
            "amux memory: shared, file-based long-term memory for coding agents. "
            "The memory store is implemented (amux.memory); the Hub, the memory CLI and "
            "`amux run` follow. Measure the store with `python -m benchmarks`."
        ),
    )
    parser.add_argument("--version", action="version", version=f"amux {__version__}")
    parser.parse_args(argv)
    parser.print_help()
    return 0
