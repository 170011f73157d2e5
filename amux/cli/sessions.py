"""`amux sessions`: what each `amux run` session froze (SPEC §6)."""

from __future__ import annotations

import sys
import time
from typing import Any

from amux.client.args import global_flag, strict_parser
from amux.client.cli import run
from amux.client.home import amux_home


def sessions_main(argv: list[str]) -> int:
    from amux.cli.pretty import render

    parser = strict_parser(prog="amux sessions",
                           description="What each `amux run` session froze.")
    commands = parser.add_subparsers(dest="action", required=True, metavar="COMMAND",
                                     parser_class=type(parser))
    commands.add_parser("list", help="every session: id, agent, started, cwd, binding, "
                        "whether it can be resumed")
    show = commands.add_parser("show", help="one session's full start state, protocol and "
                               "merged instructions included")
    show.add_argument("id", help="a session id from `amux sessions list`")
    global_flag(parser, commands, "--pretty", "a table for people instead of JSON")
    return run("amux sessions", parser.parse_args, argv, _sessions, render)


def _sessions(args: Any) -> Any:
    from amux.launcher import state
    from amux.launcher.run import session_summary

    home = amux_home()
    if args.action == "list":
        return {"sessions": [_with_started(session_summary(s))
                             for s in state.listing(home, _warn)]}
    return _with_started(state.load(home, args.id)._asdict())


def _warn(message: str) -> None:
    """A session that cannot be read is named here; the others are still listed."""
    print(f"amux sessions: warning: {message}", file=sys.stderr, flush=True)


def _with_started(session: dict[str, Any]) -> dict[str, Any]:
    """Adds `started`, `created_at` (Unix seconds, kept: the wire is add-only) as
    ISO 8601 UTC for people."""
    return {**session,
            "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(session["created_at"]))}
