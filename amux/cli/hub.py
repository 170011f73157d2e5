"""`amux hub serve|start|stop|status|reload` (SPEC §3)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from amux.client.args import strict_parser
from amux.client.cli import run
from amux.client.home import amux_home


def main(argv: list[str]) -> int:
    parser = strict_parser(prog="amux hub", description="Run and control the Hub that owns "
                           "<AMUX_HOME>/memory (AMUX_HOME defaults to the platform data dir).")
    commands = parser.add_subparsers(dest="action", required=True, metavar="COMMAND",
                                     parser_class=type(parser))
    serve = commands.add_parser("serve", help="run the Hub in the foreground until SIGTERM")
    serve.add_argument("home", nargs="?", help="AMUX_HOME to serve (default: $AMUX_HOME)")
    commands.add_parser("start", help="start the Hub in the background; returns when ready")
    commands.add_parser("stop", help="stop the Hub (in-flight requests finish)")
    commands.add_parser("status", help="JSON status; running=false when no Hub answers")
    commands.add_parser("reload", help="re-read config.toml (same as SIGHUP)")
    if argv[:1] == ["serve"]:
        from amux.client.cli import report
        from amux.errors import AmuxError
        from amux.hub.server import main as serve_main

        try:
            args = parser.parse_args(argv)
        except AmuxError as error:
            return report("amux hub", error)
        return serve_main([args.home or str(amux_home())])
    return run("amux hub", parser.parse_args, argv, _act)


def _act(args: Any) -> Any:
    from amux.hub import control

    home: Path = amux_home()
    action = {"start": control.start, "stop": control.stop, "status": control.status,
              "reload": control.reload}[args.action]
    return action(home)
