"""`amux memory search|show|upsert|forget|export`: the memory CLI (SPEC §3, Appendix A).

JSON on stdout by default (compact, bounded: what agents read); `--pretty` for
people. An error prints its Appendix A JSON on stdout, one human line on stderr,
and exits with its code's exit status. Standard library only, like the rest of
`amux.client`: it runs inside isolated runs as another user's `python3`.
"""

from __future__ import annotations

import argparse
import json
import sys

from amux.client.connection import find_connection
from amux.client.transport import HubClient
from amux.client.wire import ClientError, encode

TYPE_CHECKING = False  # `typing` is not imported at run time: see connection.py
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, NoReturn

    Render = Callable[[Any], None]
    """Shows a result to a person (`--pretty`); the installed `amux` passes a rich one."""


class Parser(argparse.ArgumentParser):
    """Usage errors are `invalid_argument` (exit 2) in the Appendix A shape too."""

    def error(self, message: str) -> NoReturn:
        raise ClientError("invalid_argument", f"{self.prog}: {message}")


def _parser() -> Parser:
    parser = Parser(
        prog="amux memory",
        description="Search, read and change amux memory through the Hub. Output is JSON "
        "(Appendix A of the SPEC); errors are JSON on stdout plus one line on stderr.",
    )
    parser.add_argument("--pretty", action="store_true", help="indented output for people")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND",
                                     parser_class=Parser)
    search = commands.add_parser("search", help="literal search over your memory scope")
    search.add_argument("terms", nargs="+", metavar="TERM", help="1-16 literal terms")
    search.add_argument("--prefix", help="only documents under this folder (whole segments)")
    search.add_argument("--limit", type=int, help="documents to return, 1-20 (default 5)")
    show = commands.add_parser("show", help="one bounded page of a document")
    show.add_argument("path")
    show.add_argument("--start-line", type=int, default=0, help="1-based first line")
    show.add_argument("--end-line", type=int, default=0, help="1-based last line (inclusive)")
    show.add_argument("--offset", type=int, help="continue at next_offset of a truncated page")
    upsert = commands.add_parser("upsert", help="create or replace a whole document")
    upsert.add_argument("path")
    upsert.add_argument("--expected-revision", required=True,
                        help="the revision you read, or 'absent' to create")
    upsert.add_argument("--file", help="read UTF-8 Markdown from this file (default: stdin)")
    forget = commands.add_parser("forget", help="delete one document")
    forget.add_argument("path")
    forget.add_argument("--expected-revision", required=True, help="the revision you read")
    export = commands.add_parser("export", help="write one whole document to stdout")
    export.add_argument("path")
    listing = commands.add_parser("list", help="documents with size, revision and date "
                                  "(for people)")
    listing.add_argument("prefix", nargs="?", help="only under this folder")
    listing.add_argument("--limit", type=int, help="at most this many, 1-1000 (default 100)")
    edit = commands.add_parser("edit", help="edit a document in $VISUAL/$EDITOR, then save "
                               "it conditionally (for people)")
    edit.add_argument("path")
    commands.add_parser("mcp", help="serve the amux MCP tools on stdin/stdout (for agents; "
                        "never starts a Hub)")
    return parser


def _read_content(file: str | None) -> str:
    try:
        if file is None:
            data = sys.stdin.buffer.read()
        else:
            with open(file, "rb") as handle:
                data = handle.read()
    except OSError as exc:
        raise ClientError("invalid_argument", f"cannot read {file}: {exc}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ClientError("not_utf8", f"content is not UTF-8 at byte {exc.start}") from None


def read_whole(client: HubClient, path: str) -> tuple[str, str] | None:
    """The whole document and its revision, paged; None when it does not exist.

    Refuses (`revision_conflict`) if the revision changes between pages, so the text
    is always one version of the document.
    """
    pages: list[str] = []
    offset = None
    revision = None
    while True:
        page = client.call("/v1/memory/get", {"path": path, "offset": offset})
        if not page["exists"]:
            if revision is None:
                return None
            page["revision"] = "absent"
        if revision is not None and page["revision"] != revision:
            raise ClientError(
                "revision_conflict",
                f"{path} changed while it was being read; nothing was written, try again",
                {"current_revision": page["revision"]},
            )
        revision = page["revision"]
        pages.append(page["content"])
        if not page["truncated"]:
            return "".join(pages), revision
        offset = page["next_offset"]


def _export(client: HubClient, path: str) -> bytes:
    whole = read_whole(client, path)
    if whole is None:
        raise ClientError("not_found", f"{path} does not exist")
    return whole[0].encode("utf-8")


def _run(args: argparse.Namespace) -> Any:
    with HubClient(find_connection()) as client:
        if args.command == "search":
            body: dict[str, Any] = {"query": " ".join(args.terms)}
            if args.prefix is not None:
                body["path_prefix"] = args.prefix
            if args.limit is not None:
                body["limit"] = args.limit
            return client.call("/v1/memory/search", body)
        if args.command == "show":
            return client.call("/v1/memory/get", {
                "path": args.path, "start_line": args.start_line, "end_line": args.end_line,
                "offset": args.offset,
            })
        if args.command == "upsert":
            return client.call("/v1/memory/upsert", {
                "path": args.path, "content": _read_content(args.file),
                "expected_revision": args.expected_revision,
            })
        if args.command == "forget":
            return client.call("/v1/memory/forget", {
                "path": args.path, "expected_revision": args.expected_revision,
            })
        if args.command == "list":
            body = {"path_prefix": args.prefix}
            if args.limit is not None:
                body["limit"] = args.limit
            return client.call("/v1/memory/list", body)
        if args.command == "edit":
            from amux.client.edit import edit

            return edit(client, args.path)
        return _export(client, args.path)


def _indented(value: Any) -> None:
    sys.stdout.write(json.dumps(value, indent=2, ensure_ascii=False) + "\n")


def _emit(value: Any, render: Render | None) -> None:
    if isinstance(value, bytes):
        sys.stdout.buffer.write(value)
    elif render is not None:
        render(value)
    else:
        sys.stdout.buffer.write(encode(value) + b"\n")
    sys.stdout.flush()


def run(prog: str, parser: argparse.ArgumentParser, argv: list[str] | None,
        action: Callable[[argparse.Namespace], Any], pretty: Render = _indented) -> int:
    """Parse, act, print the result; an error is JSON on stdout plus one stderr line."""
    render: Render | None = None
    try:
        args = parser.parse_args(argv)
        render = pretty if getattr(args, "pretty", False) else None
        _emit(action(args), render)
        return 0
    except ClientError as error:
        return report(prog, error, render)


def report(prog: str, error: ClientError, render: Render | None = None) -> int:
    """Print an error as Appendix A JSON on stdout and one line on stderr; its exit code."""
    _emit(error.to_wire(), render)
    print(f"{prog}: {error.code}: {error.message}", file=sys.stderr)
    return error.exit_code


def main(argv: list[str] | None = None, pretty: Render = _indented) -> int:
    if (sys.argv[1:] if argv is None else argv) == ["mcp"]:
        from amux.client.mcp import main as serve_mcp

        return serve_mcp()
    return run("amux memory", _parser(), argv, _run, pretty)


if __name__ == "__main__":
    sys.exit(main())
