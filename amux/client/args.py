"""Command-line arguments for the client: one table, a quick parser and argparse.

An agent calls `amux memory …` dozens of times a session, and argparse costs each
call ~4 ms (its import, plus a gettext lookup per parser it builds). So commands
are declared once as data (`Command`, `Arg`); `quick_parse` handles the plain,
well-formed calls agents make, and anything else (help, abbreviations, errors)
goes to the argparse parser built from the same table, which gives the usual
help and messages. `quick_parse` accepts nothing that argparse would refuse.
Global flags (`--pretty`) are accepted before the command and among its options.
"""

from __future__ import annotations

from types import SimpleNamespace

from amux.errors import InvalidArgument

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable, Iterable
    from typing import Any, NoReturn


class Arg:
    """One argument: a positional `name` or an option `--name`, as argparse takes it."""

    __slots__ = ("default", "flag", "help", "metavar", "name", "nargs", "required", "type")

    def __init__(self, name: str, help: str | None = None, *,
                 type: Callable[[str], Any] = str,
                 default: Any = None, required: bool = False, nargs: str | None = None,
                 metavar: str | None = None, flag: bool = False) -> None:
        self.name = name
        self.help = help
        self.type = type
        self.flag = flag
        """An option without a value (argparse `store_true`)."""
        self.default = False if flag else default
        self.required = required
        self.nargs = nargs
        self.metavar = metavar

    @property
    def option(self) -> bool:
        return self.name.startswith("--")

    @property
    def dest(self) -> str:
        return self.name.lstrip("-").replace("-", "_")


class Command:
    """One command: its help, its arguments and `run`, what carries it out (the table's
    owner calls it, with the arguments it defines)."""

    __slots__ = ("args", "help", "run")

    def __init__(self, help: str, *args: Arg, run: Callable[..., Any]) -> None:
        self.help = help
        self.args = args
        self.run = run


def quick_parse(commands: dict[str, Command], flags: tuple[str, ...],
                argv: list[str]) -> SimpleNamespace | None:
    """The arguments of a plain call, or None to let argparse decide (and explain)."""
    values: dict[str, Any] = {flag.lstrip("-"): False for flag in flags}
    position = 0
    while position < len(argv) and argv[position] in flags:
        values[argv[position].lstrip("-")] = True
        position += 1
    if position == len(argv) or argv[position] not in commands:
        return None
    name = argv[position]
    command = commands[name]
    options = {arg.name: arg for arg in command.args if arg.option}
    positionals = [arg for arg in command.args if not arg.option]
    values.update({arg.dest: arg.default for arg in command.args})
    words: list[str] = []
    rest = argv[position + 1:]
    index = 0
    split = False  # an option came after the first positional word
    try:
        while index < len(rest):
            token = rest[index]
            index += 1
            if not token.startswith("-") or token == "-":
                if split:
                    return None  # positionals on both sides of an option: argparse decides
                words.append(token)
                continue
            split = bool(words)
            key, equals, value = token.partition("=")
            if key in flags:
                if equals:
                    return None
                values[key.lstrip("-")] = True
                continue
            arg = options.get(key)
            if arg is None:
                return None  # help, an abbreviation, `--`, a typo: argparse knows
            if arg.flag:
                if equals:
                    return None
                values[arg.dest] = True
                continue
            if not equals:
                if index == len(rest) or rest[index].startswith("-"):
                    return None
                value = rest[index]
                index += 1
            values[arg.dest] = arg.type(value)
        for arg in positionals:
            if arg.nargs == "+":
                if not words:
                    return None
                values[arg.dest], words = words, []
            elif words:
                values[arg.dest] = words.pop(0)
            elif arg.nargs != "?":
                return None
    except ValueError:
        return None
    if words or any(arg.required and values[arg.dest] is None for arg in options.values()):
        return None
    return SimpleNamespace(command=name, **values)


class Parser:
    """Builds the argparse parser for the same table; usage errors are `invalid_argument`."""

    def __init__(self, prog: str, description: str, commands: dict[str, Command],
                 flags: dict[str, str]) -> None:
        self.prog = prog
        self.description = description
        self.commands = commands
        self.flags = flags

    def parse(self, argv: list[str]) -> Any:
        quick = quick_parse(self.commands, tuple(self.flags), argv)
        return quick if quick is not None else self.argparse(argv).parse_args(argv)

    def argparse(self, argv: list[str]) -> argparse.ArgumentParser:
        """The full parser; for a known command only that command's subparser."""
        parser = strict_parser(prog=self.prog, description=self.description)
        subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND",
                                           parser_class=type(parser))
        named = next((arg for arg in argv if not arg.startswith("-")), None)
        for name, command in self.commands.items():
            if named in self.commands and name != named:
                continue
            sub = subparsers.add_parser(name, help=command.help, description=command.help)
            for arg in command.args:
                if arg.flag:
                    sub.add_argument(arg.name, action="store_true", help=arg.help)
                    continue
                extra: dict[str, Any] = {"help": arg.help, "type": arg.type,
                                         "default": arg.default}
                if arg.nargs:
                    extra["nargs"] = arg.nargs
                if arg.metavar:
                    extra["metavar"] = arg.metavar
                if arg.option:
                    extra["required"] = arg.required
                sub.add_argument(arg.name, **extra)
        for flag, help_text in self.flags.items():
            global_flag(parser, subparsers, flag, help_text)
        return parser


def global_flag(parser: argparse.ArgumentParser,
                subparsers: argparse._SubParsersAction[argparse.ArgumentParser],
                flag: str, help: str) -> None:
    """A `store_true` flag accepted before the subcommand and after it, in any of its
    subcommands. A subcommand's copy has no default (SUPPRESS): argparse would otherwise
    reset the value given before the subcommand to False."""
    import argparse

    parser.add_argument(flag, action="store_true", help=help)
    for sub in subparsers.choices.values():
        sub.add_argument(flag, action="store_true", default=argparse.SUPPRESS, help=help)


class UsageError(InvalidArgument):
    """A usage error (`invalid_argument`) of the (sub)command `prog`: the stderr line
    names that command once, `amux memory search: invalid_argument: <argparse's text>`."""

    def __init__(self, prog: str, message: str) -> None:
        super().__init__(message)
        self.prog = prog


def strict_parser(**kwargs: Any) -> argparse.ArgumentParser:
    """An argparse parser whose usage errors raise `UsageError` (`invalid_argument`)."""
    import argparse

    class Commands(argparse._SubParsersAction):  # type: ignore[type-arg]
        """A command's one-line help is also what its own --help opens with."""

        def add_parser(self, name: str, **options: Any) -> Any:
            if "help" in options and "description" not in options:
                options["description"] = options["help"][:1].upper() + options["help"][1:]
            return super().add_parser(name, **options)

    class StrictParser(argparse.ArgumentParser):
        def __init__(self, **options: Any) -> None:
            super().__init__(**options)
            self.register("action", "parsers", Commands)

        def error(self, message: str) -> NoReturn:
            raise UsageError(self.prog, _suggested(self.prog, message))

    return StrictParser(**kwargs)


def closest(word: str, names: Iterable[str], n: int = 1) -> list[str]:
    """At most `n` of `names` that `word` most likely meant, best first: those that differ
    from it only in case, then the one name it begins (`hub stat`: `status`, where edit
    distance says `start`), then difflib's closest (among the names it begins, if
    several, else among all)."""
    import difflib

    folded: dict[str, list[str]] = {}
    for name in names:
        folded.setdefault(name.lower(), []).append(name)
    key = word.lower()
    found = list(folded.get(key, []))
    begun = [name for name in folded if name.startswith(key) and name != key]
    if len(begun) == 1:
        found += folded[begun[0]]
    else:
        close = difflib.get_close_matches(key, begun, n) or difflib.get_close_matches(
            key, list(folded), n)
        found += [name for each in close if each != key for name in folded[each]]
    return found[:n]


def _suggested(prog: str, message: str) -> str:
    """argparse's "invalid choice" with the closest choice named (`amux memory serch`:
    did you mean `amux memory search`?)."""
    import re

    found = re.fullmatch(r"argument (\S+): invalid choice: '(.*)' \(choose from (.*)\)",
                         message, re.S)
    if found is None:
        return message
    argument, word, listed = found.groups()
    close = closest(word, re.findall(r"'([^']*)'", listed))
    if not close:
        return message
    if argument.startswith("-"):
        return f"{message}; did you mean {argument} {close[0]}?"
    return f"unknown command {word!r}; did you mean `{prog} {close[0]}`?"
