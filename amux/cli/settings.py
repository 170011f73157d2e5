"""`amux settings show|set|unset`: the per-user defaults of `amux run`
(`amux.launcher.settings`). JSON out, errors as every amux command's."""

from __future__ import annotations

from typing import Any

from amux.adapters import ADAPTERS
from amux.adapters.base import without_userinfo
from amux.client.args import strict_parser
from amux.client.cli import run
from amux.launcher import settings


def settings_main(argv: list[str]) -> int:
    keys = ", ".join(f"{key} ({what})" for key, (_, what) in settings.KEYS.items())
    parser = strict_parser(
        prog="amux settings",
        description=f"Your defaults for new `amux run` sessions, in {settings.settings_path()}: "
        "run.KEY for every agent, agents.NAME.KEY for one (over run.KEY). Keys: " + keys
        + ". Options given to `amux run` win; a resume keeps what its session froze.")
    commands = parser.add_subparsers(dest="action", required=True, metavar="COMMAND",
                                     parser_class=type(parser))
    show = commands.add_parser("show", help="the settings, or one agent's with where each "
                               "comes from")
    show.add_argument("agent", nargs="?", choices=list(ADAPTERS), metavar="AGENT",
                      help=", ".join(ADAPTERS))
    put = commands.add_parser("set", help="set a key, e.g. `run.model qwen3` or "
                              "`agents.claude.memory false`")
    put.add_argument("key", help="run.KEY or agents.NAME.KEY")
    put.add_argument("value", help="true or false for memory, else the option's value")
    unset = commands.add_parser("unset", help="remove a key")
    unset.add_argument("key", help="run.KEY or agents.NAME.KEY")
    return run("amux settings", parser.parse_args, argv, _act)


def _act(args: Any) -> Any:
    if args.action == "set":
        return {"key": args.key, "value": _shown(settings.change(args.key, args.value))}
    if args.action == "unset":
        settings.change(args.key, None)
        return {"key": args.key, "value": None}
    found = settings.load()
    if args.agent is None:
        return {"path": str(found.path), "settings": {
            f"{table}.{key}": _shown(value) for table, values in found.tables.items()
            for key, value in values.items()}}
    return {"path": str(found.path), "agent": args.agent, "settings": {
        key: {"value": _shown(setting.value), "from": setting.key}
        for key, setting in found.of(args.agent).items()}}


def _shown(value: settings.Value | None) -> settings.Value | None:
    """A value as amux shows it: a URL without its user and password."""
    return without_userinfo(value) if isinstance(value, str) else value
