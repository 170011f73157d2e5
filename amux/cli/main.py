"""Entry point of the `amux` console script: a thin dispatcher with lazy imports.

`amux memory …` goes straight to the standard-library client so it starts as fast
as the client alone; every other command imports only its own module.
"""

from __future__ import annotations

import os
import sys

from amux import __version__

TYPE_CHECKING = False  # `typing` is not imported at run time: see amux/client/connection.py
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import NoReturn


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


PRETTY_GROUPS = ("memory", "sessions")
"""The command groups with `--pretty`, which is also accepted before the group's name."""


def _dispatch(args: list[str]) -> int:
    if args[:1] == ["--pretty"] and args[1:2] and args[1] in PRETTY_GROUPS:
        args = [args[1], "--pretty", *args[2:]]
    if args[:1] == ["memory"]:
        from amux.cli.pretty import render
        from amux.client.cli import main as memory

        if args[1:2] == ["mcp"]:  # the MCP server never starts a Hub (SPEC §3)
            return memory(args[1:])
        return memory(args[1:], pretty=render, start_hub=_local_hub_starter())
    if args[:1] == ["hub"]:
        from amux.cli.hub import main as hub

        return hub(args[1:])
    if args[:2] == ["system", "config"]:
        from amux.cli.admin import config_main

        return _local_hub_error("amux system config", args[2:]) or config_main(args[2:])
    if args[:1] == ["run"]:
        from amux.cli.run import run_main

        return run_main(args[1:])
    if args[:1] == ["ui"]:
        from amux.cli.ui import ui_main

        starts = args[1:2] not in (["stop"], ["status"])
        return (starts and _local_hub_error("amux ui", args[1:])) or ui_main(args[1:])
    if args[:1] == ["sessions"]:
        from amux.cli.sessions import sessions_main

        return sessions_main(args[1:])
    if args[:1] == ["eval"]:
        from amux.cli.eval import eval_main

        return eval_main(args[1:])
    if args[:1] == ["doctor"]:
        from amux.cli.doctor import doctor_main

        return doctor_main(args[1:])
    if args[:1] == ["settings"]:
        from amux.cli.settings import settings_main

        return settings_main(args[1:])
    if args[:1] == ["completion"]:
        from amux.cli.completion import completion_main

        return completion_main(args[1:], _top_level())
    if args[:2] == ["protocol", "show"]:
        return _protocol_show(args[2:])
    if args[:2] == ["system", "secrets"]:
        from amux.cli.admin import secrets_main

        return _local_hub_error("amux system secrets", args[2:]) or secrets_main(args[2:])
    if args[:1] == ["principal"]:
        from amux.cli.admin import principal_main

        return _local_hub_error("amux principal", args[1:]) or principal_main(args[1:])
    if args[:1] == ["system"]:
        return _group("amux system", "Hub administration (owner only). `amux system COMMAND "
                      "--help` shows a command's own help.", _SYSTEM, args[1:])
    if args[:1] == ["protocol"]:
        return _group("amux protocol", "The fixed memory protocol that `amux run` gives "
                      "agents.", _PROTOCOL, args[1:])
    if args[:1] == ["--version"]:
        print(f"amux {__version__}")
        return 0
    return _group("amux", "amux memory: shared, file-based long-term memory for coding "
                  "agents. `amux COMMAND --help` shows a command's own help; --version "
                  "prints the version.", _top_level(), args, _elsewhere())


Rows = tuple[tuple[str, str], ...]
"""A command list for help: (command and its words, what it does)."""

_SYSTEM: Rows = (
    ("config get|set", "Hub configuration: memory.enabled, isolation.enabled, listeners"),
    ("secrets allow|remove|list", "the secret guard's per-scope allow list"),
)
_PROTOCOL: Rows = (("show [--mcp|--cli]", "print the protocol text for one memory channel"),)


def _top_level() -> Rows:
    """Every command, the memory ones from the client's own table."""
    from amux.adapters import ADAPTERS
    from amux.client.cli import COMMANDS

    return (
        *((f"memory {name}", command.help) for name, command in COMMANDS.items()),
        ("run [OPTIONS] AGENT [-- ARGS...]", f"launch a coding agent ({', '.join(ADAPTERS)}) "
         "with amux memory; --dry-run prints the plan, --resume ID resumes a session"),
        ("sessions list|show ID|prune", "what each `amux run` session froze; prune old "
         "ones and ones that cannot be resumed"),
        ("settings show|set|unset", "your defaults for new `amux run` sessions: memory, "
         "endpoint and model, for every agent or one"),
        ("doctor", "check the set-up: Hub, connection, agents, memory health"),
        ("ui [stop|status]", "the memory page in your browser: browse, read, search, "
         "history, undo, edit, the memory switch"),
        *((f"protocol {name}", text) for name, text in _PROTOCOL),
        ("hub serve|start|stop|status|reload", "run and control the Hub"),
        *((f"system {name}", f"{text} (owner only)") for name, text in _SYSTEM),
        ("principal add|alias|token|revoke|delegate|list",
         "who may use this Hub's memory (owner only)"),
        ("eval live", "how well a model uses memory through the real agent"),
        ("completion bash|zsh|fish", "a shell completion script (`amux completion --help` "
         "says how to install it)"),
    )


def _elsewhere() -> dict[str, str]:
    """The commands a word of another group names at the top level, from their own tables:
    `amux search` means `amux memory search`, `amux claude` `amux run claude`."""
    from amux.adapters import ADAPTERS
    from amux.client.cli import COMMANDS

    return {**{name: f"amux run {name}" for name in ADAPTERS},
            **{name: f"amux memory {name}" for name in COMMANDS}}


def _group(prog: str, about: str, rows: Rows, argv: list[str],
           elsewhere: dict[str, str] | None = None) -> int:
    """A command group without argparse: its help (nothing, -h, --help), else a usage
    error naming the closest command, of the group or `elsewhere` (word: the command it
    names), exit 2; the command list follows only when no command is close (a typo
    needs one line, not the whole help)."""
    text = _help(prog, about, rows)
    if not argv or argv[0] in ("-h", "--help"):
        sys.stdout.write(text)
        return 0
    from amux.client.args import UsageError, closest
    from amux.client.cli import report

    word = argv[0]
    commands = {**(elsewhere or {}),
                **{name.split()[0]: f"{prog} {name.split()[0]}" for name, _text in rows}}
    close = closest(word, commands)
    kind = "option" if word.startswith("-") else "command"
    hint = (f"; did you mean `{commands[close[0]]}`?" if close
            else f"; `{prog} --help` lists them")
    code = report(prog, UsageError(prog, f"unknown {kind} {word!r}{hint}"))
    if not close:
        sys.stderr.write("\n" + text)
    return code


def _help(prog: str, about: str, rows: Rows) -> str:
    """Usage, `about`, then the rows in two columns; a long name has a line of its own."""
    import textwrap

    width = min(max(len(name) for name, _text in rows), 32) + 4
    lines = [f"usage: {prog} COMMAND [ARGS...]", "", *textwrap.wrap(about, 79), "",
             "commands:"]
    for name, text in rows:
        described = textwrap.wrap(text, 79 - width) or [""]
        if len(name) + 4 > width:
            lines.append(f"  {name}")
        else:
            lines.append(f"  {name:<{width - 2}}{described.pop(0)}")
        lines.extend(" " * width + line for line in described)
    return "\n".join(lines) + "\n"


def _protocol_show(argv: list[str]) -> int:
    from amux.client.args import strict_parser
    from amux.client.cli import run

    parser = strict_parser(
        prog="amux protocol show",
        description="Print the fixed memory protocol that `amux run` merges into an agent's "
        "instructions (amux/protocol/protocol.md), rendered for one memory channel.")
    channel = parser.add_mutually_exclusive_group()
    channel.add_argument("--mcp", dest="channel", action="store_const", const="mcp",
                         help="the rendering naming the MCP tools (the default)")
    channel.add_argument("--cli", dest="channel", action="store_const", const="cli",
                         help="the rendering naming `amux memory` commands")
    from amux.protocol.render import render

    return run("amux protocol show", parser.parse_args, argv,
               lambda args: render(args.channel or "mcp").encode("utf-8"))


def _local_hub_starter() -> Callable[[], None] | None:
    """What starts the local Hub when a memory call finds none answering; None when the
    connection is configured (AMUX_MEMORY_CONFIG, AMUX_HUB): those are never started."""
    if os.environ.get("AMUX_MEMORY_CONFIG") or os.environ.get("AMUX_HUB"):
        return None

    def start() -> None:
        from amux.client.home import amux_home
        from amux.hub import control

        control.start(amux_home())

    return start


def _local_hub_error(prog: str, argv: list[str]) -> int:
    """Start the local Hub on demand; 0 when there is one, else the reported error's exit.

    Only the installed `amux` does this, and only for the local default: never when
    AMUX_MEMORY_CONFIG or AMUX_HUB names a Hub (the standard-library client never
    starts one).
    """
    start = _local_hub_starter()
    if start is None or any(arg in ("-h", "--help") for arg in argv):
        return 0
    from amux.client.home import amux_home
    from amux.hub import control

    if control.answering(amux_home()):
        return 0
    from amux.client.cli import report
    from amux.errors import AmuxError

    try:
        start()
    except AmuxError as error:
        return report(prog, error)
    return 0


if __name__ == "__main__":
    sys.exit(main())
