"""`amux sessions`: what each `amux run` session froze (SPEC §6)."""

from __future__ import annotations

from typing import Any

from amux.client.args import strict_parser
from amux.client.cli import run
from amux.client.home import amux_home


def sessions_main(argv: list[str]) -> int:
    parser = strict_parser(prog="amux sessions",
                           description="What each `amux run` session froze.")
    commands = parser.add_subparsers(dest="action", required=True, parser_class=type(parser))
    commands.add_parser("list", help="every session: id, agent, channel, binding")
    show = commands.add_parser("show", help="one session's full start state, protocol and "
                               "merged instructions included")
    show.add_argument("id")
    return run("amux sessions", parser.parse_args, argv, _sessions)


def _sessions(args: Any) -> Any:
    from amux.launcher import state
    from amux.launcher.run import session_summary

    home = amux_home()
    if args.action == "list":
        return {"sessions": [session_summary(s) for s in state.listing(home)]}
    return state.load(home, args.id)._asdict()

