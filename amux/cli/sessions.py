"""`amux sessions`: what each `amux run` session froze, and pruning what is not needed."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

from amux.client.args import global_flag, strict_parser
from amux.client.cli import run
from amux.client.home import amux_home
from amux.errors import InvalidArgument


def sessions_main(argv: list[str]) -> int:
    from amux.cli.pretty import render

    parser = strict_parser(prog="amux sessions",
                           description="What each `amux run` session froze.")
    commands = parser.add_subparsers(dest="action", required=True, metavar="COMMAND",
                                     parser_class=type(parser))
    commands.add_parser("list", help="every session: id, agent, started, cwd, binding, "
                        "whether it can be resumed").set_defaults(run=_list)
    show = commands.add_parser("show", help="one session's full start state, protocol and "
                               "merged instructions included")
    show.add_argument("id", help="a session id from `amux sessions list`")
    show.set_defaults(run=_show)
    prune = commands.add_parser(
        "prune", help="remove the saved state of sessions started long ago, or that cannot "
        "be resumed (the agent kept nothing); each option adds the sessions it names")
    prune.add_argument("--older-than", metavar="DAYS", type=float,
                       help="sessions started more than DAYS days ago")
    prune.add_argument("--unresumable", action="store_true",
                       help="sessions that cannot be resumed")
    prune.add_argument("--dry-run", action="store_true",
                       help="list what would be removed, and remove nothing")
    prune.set_defaults(run=lambda args: _prune(amux_home(), args.older_than,
                                               args.unresumable, args.dry_run))
    global_flag(parser, commands, "--pretty", "a table for people instead of JSON")
    return run("amux sessions", parser.parse_args, argv, lambda args: args.run(args), render)


def _list(args: Any) -> Any:
    from amux.launcher import state

    return {"sessions": [_with_started(s.summary())
                         for s in state.listing(amux_home(), _warn)]}


def _show(args: Any) -> Any:
    from amux.launcher import state

    return _with_started(state.load(amux_home(), args.id)._asdict())


def _prune(home: Path, older_than: float | None, unresumable: bool,
           dry_run: bool) -> dict[str, Any]:
    """The sessions pruned (or that would be), each with why. A session whose launcher
    still runs is kept; an isolated session's files in its user's home are that user's,
    and stay."""
    import shutil

    from amux.launcher import rundirs, state

    if older_than is None and not unresumable:
        raise InvalidArgument("name what to prune: --older-than DAYS, "
                              "--unresumable, or both")
    if older_than is not None and older_than < 0:
        raise InvalidArgument("--older-than takes a number of days, 0 or more")
    now, pruned = time.time(), []
    for session in state.listing(home, _warn):
        why = []
        if older_than is not None and now - session.created_at > older_than * 86400:
            why.append(f"started more than {older_than:g} days ago")
        if unresumable and not session.resumable:
            why.append(f"cannot be resumed: {session.not_resumable_reason or 'it says so'}")
        if not why or rundirs.running(home, session.id):
            continue
        if not dry_run:
            shutil.rmtree(state.session_dir(home, session.id), ignore_errors=True)
        pruned.append({"id": session.id, "agent": session.agent,
                       "started": _with_started(session._asdict())["started"],
                       "why": "; ".join(why)})
    return {"pruned": pruned, "dry_run": dry_run}


def _warn(message: str) -> None:
    """A session that cannot be read is named here; the others are still listed."""
    print(f"amux sessions: warning: {message}", file=sys.stderr, flush=True)


def _with_started(session: dict[str, Any]) -> dict[str, Any]:
    """Adds `started`, `created_at` (Unix seconds, kept: the wire is add-only) as
    ISO 8601 UTC for people."""
    return {**session,
            "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(session["created_at"]))}
