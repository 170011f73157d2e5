"""Entry point of the `amux` console script: a thin dispatcher with lazy imports.

`amux memory …` goes straight to the standard-library client so it starts as fast
as the client alone; every other command imports only its own module.
"""

from __future__ import annotations

import os
import sys
from typing import NoReturn

from amux import __version__


def entry() -> NoReturn:
    """The console script: `main`, then out without the interpreter's teardown, which
    spends ~9 ms freeing modules at the end of every command. Nothing of ours runs at
    exit: every file is written and closed before `main` returns, and stdout and
    stderr are flushed here."""
    code = main()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a reader that went away, or a closed stream
            code = code or 1
    os._exit(code)


def main(argv: list[str] | None = None) -> int:
    """The `amux` command; a bug is one stderr line and a logged traceback
    (`amux.client.cli.last_resort`: `AMUX_DEBUG=1` re-raises it)."""
    from amux.client.cli import last_resort

    args = sys.argv[1:] if argv is None else argv
    return last_resort(lambda: _dispatch(args))


def _dispatch(args: list[str]) -> int:
    if args[:1] == ["memory"]:
        from amux.cli.pretty import render
        from amux.client.cli import main as memory

        if args[1:2] == ["mcp"]:  # the MCP server never starts a Hub (SPEC §3)
            return memory(args[1:])
        return _local_hub_error("amux memory", args[1:]) or memory(args[1:], pretty=render)
    if args[:1] == ["hub"]:
        from amux.cli.hub import main as hub

        return hub(args[1:])
    if args[:2] == ["system", "config"]:
        from amux.cli.admin import config_main

        return _local_hub_error("amux system config", args[2:]) or config_main(args[2:])
    if args[:1] == ["run"]:
        from amux.cli.run import run_main

        return run_main(args[1:])
    if args[:1] == ["sessions"]:
        from amux.cli.sessions import sessions_main

        return sessions_main(args[1:])
    if args[:1] == ["eval"]:
        from amux.cli.eval import eval_main

        return eval_main(args[1:])
    if args[:2] == ["protocol", "show"]:
        return _protocol_show(args[2:])
    if args[:2] == ["system", "secrets"]:
        from amux.cli.admin import secrets_main

        return _local_hub_error("amux system secrets", args[2:]) or secrets_main(args[2:])
    if args[:1] == ["principal"]:
        from amux.cli.admin import principal_main

        return _local_hub_error("amux principal", args[1:]) or principal_main(args[1:])
    import argparse  # only for `amux --help` and friends: memory calls never pay for it

    parser = argparse.ArgumentParser(
        prog="amux",
        description="amux memory: shared, file-based long-term memory for coding agents.",
        epilog="commands: `amux memory search|show|upsert|forget|export|doctor` (talk to the Hub); "
        "`amux run [--dry-run] [--resume ID] AGENT [-- ARGS]` (launch an agent with memory); "
        "`amux sessions list|show`; `amux eval live` (how well a model uses memory through "
        "the real agent); "
        "`amux memory mcp` (the stdio MCP server); `amux protocol show [--mcp|--cli]`; "
        "`amux hub serve|start|stop|status|reload`; "
        "`amux system config get|set`, `amux system secrets allow|remove|list`, "
        "`amux principal add|alias|token|revoke|delegate|list` "
        "(owner only).",
    )
    parser.add_argument("--version", action="version", version=f"amux {__version__}")
    parser.parse_args(args)
    parser.print_help()
    return 0


def _protocol_show(argv: list[str]) -> int:
    import argparse

    parser = argparse.ArgumentParser(
        prog="amux protocol show",
        description="Print the fixed memory protocol that `amux run` merges into an agent's "
        "instructions (amux/protocol/protocol.md), rendered for one memory channel.")
    channel = parser.add_mutually_exclusive_group()
    channel.add_argument("--mcp", dest="channel", action="store_const", const="mcp",
                         help="the rendering naming the MCP tools (the default)")
    channel.add_argument("--cli", dest="channel", action="store_const", const="cli",
                         help="the rendering naming `amux memory` commands")
    args = parser.parse_args(argv)
    from amux.protocol.render import render

    sys.stdout.write(render(args.channel or "mcp"))
    return 0


def _local_hub_error(prog: str, argv: list[str]) -> int:
    """Start the local Hub on demand; 0 when there is one, else the reported error's exit.

    Only the installed `amux` does this, and only for the local default: never when
    AMUX_MEMORY_CONFIG or AMUX_HUB names a Hub (the standard-library client never
    starts one).
    """
    if os.environ.get("AMUX_MEMORY_CONFIG") or os.environ.get("AMUX_HUB"):
        return 0
    if any(arg in ("-h", "--help") for arg in argv):
        return 0
    from amux.client.home import amux_home
    from amux.hub import control

    home = amux_home()
    if control.answering(home):
        return 0
    from amux.client.cli import report
    from amux.client.wire import ClientError

    try:
        control.start(home)
    except ClientError as error:
        return report(prog, error)
    return 0


if __name__ == "__main__":
    sys.exit(main())
