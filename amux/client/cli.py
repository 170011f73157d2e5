"""`amux memory search|show|upsert|forget|export`: the memory CLI (SPEC §3, Appendix A).

JSON on stdout by default (compact, bounded: what agents read); `--pretty` for
people. An error prints its Appendix A JSON on stdout, one human line on stderr,
and exits with its code's exit status. Standard library only, like the rest of
`amux.client`: it runs inside isolated runs as another user's `python3`.
"""

from __future__ import annotations

import json
import sys

from amux.client.args import Arg, Command, Parser
from amux.client.connection import find_connection
from amux.client.transport import HubClient
from amux.client.wire import ClientError, encode

TYPE_CHECKING = False  # `typing` is not imported at run time: see connection.py
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    Render = Callable[[Any], None]
    """Shows a result to a person (`--pretty`); the installed `amux` passes a rich one."""


COMMANDS: dict[str, Command] = {
    "search": Command(
        "literal search over your memory scope",
        Arg("terms", "1-16 literal terms", nargs="+", metavar="TERM"),
        Arg("--prefix", "only documents under this folder (whole segments)"),
        Arg("--limit", "documents to return, 1-20 (default 5)", type=int)),
    "show": Command(
        "one bounded page of a document",
        Arg("path"),
        Arg("--start-line", "1-based first line", type=int, default=0),
        Arg("--end-line", "1-based last line (inclusive)", type=int, default=0),
        Arg("--offset", "continue at next_offset of a truncated page", type=int)),
    "upsert": Command(
        "create or replace a whole document",
        Arg("path"),
        Arg("--expected-revision", "the revision you read, or 'absent' to create",
            required=True),
        Arg("--file", "read UTF-8 Markdown from this file (default: stdin)")),
    "forget": Command(
        "delete one document",
        Arg("path"),
        Arg("--expected-revision", "the revision you read", required=True)),
    "export": Command("write one whole document to stdout", Arg("path")),
    "list": Command(
        "documents with size, revision and date (for people)",
        Arg("prefix", "only under this folder", nargs="?"),
        Arg("--limit", "at most this many, 1-1000 (default 100)", type=int)),
    "edit": Command("edit a document in $VISUAL/$EDITOR, then save it conditionally "
                    "(for people)", Arg("path")),
    "doctor": Command(
        "read-only health report of your memory scope: entry size and detail, missing "
        "descriptions, duplicates, dangling links, project ids, old documents, quota headroom",
        Arg("--json", "the machine form (JSON) instead of the readable report", flag=True)),
    "mcp": Command("serve the amux MCP tools on stdin/stdout (for agents; never starts a Hub)"),
}

PARSER = Parser(
    "amux memory",
    "Search, read and change amux memory through the Hub. Output is JSON (Appendix A of "
    "the SPEC); errors are JSON on stdout plus one line on stderr.",
    COMMANDS, {"--pretty": "indented output for people"})


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


def _run(args: Any) -> Any:
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
        if args.command == "doctor":
            result = client.call("/v1/memory/doctor", {})
            if args.json or args.pretty:
                return result
            from amux.client.doctor import report

            return report(result).encode("utf-8")
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


def run(prog: str, parse: Callable[[list[str]], Any], argv: list[str],
        action: Callable[[Any], Any], pretty: Render = _indented) -> int:
    """Parse, act, print the result; an error is JSON on stdout plus one stderr line."""
    render: Render | None = None
    try:
        args = parse(argv)
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
    arguments = sys.argv[1:] if argv is None else argv
    return run("amux memory", PARSER.parse, arguments, _run, pretty)


if __name__ == "__main__":
    sys.exit(main())
