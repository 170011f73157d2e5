"""Entry point of the `amux` console script: a thin dispatcher with lazy imports.

`amux memory …` goes straight to the standard-library client so it starts as fast
as the client alone. Built so far: `amux memory`, `amux hub serve`, `amux system
config`, `amux principal`. The rest of SPEC §3's command surface (hub
start|stop|status|reload, run, sessions) is issue 3 onwards.
"""

from __future__ import annotations

import argparse
import sys

from amux import __version__


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["memory"]:
        from amux.client.cli import main as memory

        return memory(args[1:])
    if args[:2] == ["hub", "serve"]:
        from amux.client.home import amux_home
        from amux.hub.server import main as serve

        return serve(args[2:] or [str(amux_home())])
    if args[:2] == ["system", "config"]:
        from amux.cli.admin import config_main

        return config_main(args[2:])
    if args[:1] == ["principal"]:
        from amux.cli.admin import principal_main

        return principal_main(args[1:])
    parser = argparse.ArgumentParser(
        prog="amux",
        description="amux memory: shared, file-based long-term memory for coding agents.",
        epilog="commands: `amux memory search|show|upsert|forget|export` (talk to the Hub); "
        "`amux hub serve [HOME]` (run the Hub in the foreground); "
        "`amux system config get|set`, `amux principal add|alias|token|revoke|delegate|list` "
        "(owner only).",
    )
    parser.add_argument("--version", action="version", version=f"amux {__version__}")
    parser.parse_args(args)
    parser.print_help()
    return 0


if __name__ == "__main__":
    sys.exit(main())
