"""`amux memory search|show|upsert|forget|export|import|log|diff|restore…`: the memory CLI (SPEC §3,
Appendix A).

JSON on stdout by default (compact, bounded: what agents read); `--pretty` for
people. An error prints its Appendix A JSON on stdout, one human line on stderr,
and exits with its code's exit status. A bug is one stderr line and a logged
traceback (`last_resort`). Standard library only, like the rest of `amux.client`:
it runs inside isolated runs as another user's `python3`.
"""

from __future__ import annotations

import json
import os
import sys

from amux.client.args import Arg, Command, Parser, UsageError, closest
from amux.client.revisions import log, resolve
from amux.client.transport import HubClient, hub_client
from amux.encoding import encode
from amux.errors import AmuxError, InvalidArgument, NotFound, NotUtf8

TYPE_CHECKING = False  # `typing` is not imported at run time: see connection.py
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    Render = Callable[[Any], None]
    """Shows a result to a person (`--pretty`); the installed `amux` passes a rich one."""
    StartHub = Callable[[], None]
    """Starts the local default Hub (the installed `amux` passes one; the single-file client
    never starts a Hub, SPEC §3)."""
    Handler = Callable[[Any, StartHub | None], Any]
    """What carries out one command (`Command.run`): its parsed arguments and the Hub
    starter in, its result (JSON, or bytes printed as they are) out."""


LIST_MAX = 1000
"""The most documents one `list` answers (docs/wire.md)."""
PATH_HELP = ("the document's path in your memory, e.g. "
             "projects/github.com-org-repo/decisions.md")

def _read_content(file: str | None) -> str:
    try:
        if file is None:
            if sys.stdin.isatty():  # a person at a terminal would otherwise see nothing
                print("amux memory upsert: reading the document from stdin; end it with "
                      "Ctrl-D on a line of its own (or pass --file FILE)", file=sys.stderr)
            data = sys.stdin.buffer.read()
        else:
            with open(file, "rb") as handle:
                data = handle.read()
    except OSError as exc:
        raise InvalidArgument(f"cannot read {file}: {exc}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise NotUtf8(f"content is not UTF-8 at byte {exc.start}") from None


def _missing(client: HubClient, path: str) -> NotFound:
    """`path` does not exist: `not_found` naming the scope's documents it is near (the
    same but for case first: `memory.md`, did you mean MEMORY.md?)."""
    listed = client.call("/v1/memory/list", {"limit": LIST_MAX})["documents"]
    near = closest(path, [document["path"] for document in listed], 3)
    if near:
        return NotFound(f"{path} does not exist; did you mean {' or '.join(near)}?")
    return NotFound(f"{path} does not exist (upsert creates it with --expected-revision "
                    "absent; `amux memory list` lists your documents)")


def _export(client: HubClient, args: Any) -> Any:
    from amux.client.read import read_whole

    if args.dir is not None:
        if args.path is not None:
            raise InvalidArgument("give PATH (one document to stdout) or --dir DIR (the "
                                  "whole scope into a folder), not both")
        from amux.client.transfer import export_dir

        return export_dir(client, args.dir, args.prefix)
    if args.path is None:
        raise InvalidArgument("give PATH (one document to stdout) or --dir DIR (the whole "
                              "scope into a folder)")
    if args.prefix is not None:
        raise InvalidArgument("--prefix goes with --dir DIR; PATH is one document")
    whole = read_whole(client, args.path)
    if whole is None:
        raise _missing(client, args.path)
    return whole[0].encode("utf-8")


def _import(client: HubClient, args: Any) -> Any:
    from amux.client.stores import Options, gather
    from amux.client.transfer import run_import

    chosen: dict[str, str] = {}
    for pair in (args.project_id or "").split(","):
        if not pair.strip():
            continue
        key, equals, value = pair.strip().partition("=")
        if not equals or not key or not value or "/" in value or value.startswith("."):
            raise InvalidArgument(f"--project-id {pair.strip()!r}: give KEY=ID, KEY as the "
                                  "dry run's projects[].source, ID a folder name such as "
                                  "github.com-org-repo")
        chosen[key] = value
    into = (args.into or "").strip("/")
    options = Options(folder=args.path, into=into + "/" if into else "", project_ids=chosen)
    if args.source is None:
        if args.apply or args.overwrite:
            raise InvalidArgument("name what to import: amux memory import SOURCE --apply "
                                  "(`amux memory import` alone lists the stores found)")
        from amux.client.stores import found_stores

        return {"stores": found_stores(os.environ, options)}
    if args.path is not None and args.source != "cline":
        raise InvalidArgument("--path names Cline's repository (`import cline --path REPO`); "
                              "a folder is given as SOURCE itself")
    return run_import(client, gather(args.source, os.environ, options), args.apply,
                      args.overwrite)


def _on_hub(handler: Callable[[HubClient, Any], Any]) -> Handler:
    """`handler(client, args)` run with a client of the Hub this process uses."""
    def run(args: Any, start_hub: StartHub | None) -> Any:
        with hub_client(start_hub) as client:
            return handler(client, args)
    return run


def _search(client: HubClient, args: Any) -> Any:
    body: dict[str, Any] = {"query": " ".join(args.terms)}
    if args.prefix is not None:
        body["path_prefix"] = args.prefix
    if args.limit is not None:
        body["limit"] = args.limit
    return client.call("/v1/memory/search", body)


def _show(client: HubClient, args: Any) -> Any:
    if args.revision is not None:
        return client.call("/v1/memory/version", {
            "path": args.path, "revision": resolve(client, args.path, args.revision,
                                                   "--revision")})
    page = client.call("/v1/memory/get", {
        "path": args.path, "start_line": args.start_line, "end_line": args.end_line,
        "offset": args.offset,
    })
    if not page["exists"]:
        missing = _missing(client, args.path)
        if args.pretty:  # a table for a person: not_found, naming the near documents
            raise missing
        # The JSON stays `exists: false` (SPEC Appendix A: agents on the CLI channel and
        # scripts read it); the person at the terminal is told on stderr.
        sys.stderr.write(f"amux memory show: {missing.message}\n")
    return page


def _upsert(client: HubClient, args: Any) -> Any:
    return client.call("/v1/memory/upsert", {
        "path": args.path, "content": _read_content(args.file),
        "expected_revision": resolve(client, args.path, args.expected_revision,
                                     "--expected-revision"),
    })


def _forget(client: HubClient, args: Any) -> Any:
    return client.call("/v1/memory/forget", {
        "path": args.path, "expected_revision": resolve(client, args.path,
                                                        args.expected_revision,
                                                        "--expected-revision"),
    })


def _list(client: HubClient, args: Any) -> Any:
    body = {"path_prefix": args.prefix}
    if args.limit is not None:
        body["limit"] = args.limit
    if args.pretty:  # the table's "by" column
        body["changed"] = True
    return client.call("/v1/memory/list", body)


def _log(client: HubClient, args: Any) -> Any:
    body = {"path": args.path}
    if args.since is not None:
        body["since"] = since(args.since)
    for key in ("limit", "before", "session"):
        if getattr(args, key) is not None:
            body[key] = getattr(args, key)
    return log(client, body, args.principal)


def _purge(client: HubClient, args: Any) -> Any:
    body = {"action": "purge", "path": args.path}
    if args.principal is not None:
        body["principal"] = args.principal
    if args.revision is not None:
        body["revision"] = resolve(client, args.path, args.revision, "--revision",
                                   args.principal)
    return client.call("/v1/admin/history", body)


def _diff(client: HubClient, args: Any) -> Any:
    result = client.call("/v1/memory/diff", {
        "path": args.path, "from_revision": resolve(client, args.path, args.from_revision,
                                                    "FROM"),
        "to_revision": resolve(client, args.path, args.to_revision, "TO")})
    return result if args.pretty else str(result["diff"]).encode("utf-8")


def _restore(client: HubClient, args: Any) -> Any:
    return client.call("/v1/memory/restore", {
        "path": args.path, "revision": resolve(client, args.path, args.revision, "--revision"),
        "expected_revision": resolve(client, args.path, args.expected_revision,
                                     "--expected-revision")})


def _edit(client: HubClient, args: Any) -> Any:
    from amux.client.edit import edit

    return edit(client, args.path)


def _doctor(client: HubClient, args: Any) -> Any:
    result = client.call("/v1/memory/doctor", {})
    if args.json or args.pretty:
        return result
    from amux.client.health_report import report

    return report(result).encode("utf-8")


SYNC_TIMEOUT_SECONDS = 900.0
"""A sync fetches, merges and pushes in the Hub: the answer can take minutes."""


def _remote(client: HubClient, args: Any) -> Any:
    if args.action not in ("add", "remove", "list"):
        raise UsageError("amux memory remote",
                         f"the action is add, remove or list, got {args.action!r}")
    body: dict[str, Any] = {"action": args.action}
    if args.action in ("add", "remove"):
        if args.name is None or (args.action == "add") != (args.url is not None):
            raise UsageError("amux memory remote",
                             "usage: amux memory remote add NAME URL | remove NAME | list")
        body["name"] = args.name
        if args.url is not None:
            body["url"] = args.url
    elif args.name is not None:
        raise UsageError("amux memory remote",
                         "usage: amux memory remote list (no further argument)")
    return client.call("/v1/memory/remotes", body)


def _sync(client: HubClient, args: Any) -> Any:
    body: dict[str, Any] = {"dry_run": args.dry_run}
    if args.remote is not None:
        body["remote"] = args.remote
    client.set_timeout(SYNC_TIMEOUT_SECONDS)
    return client.call("/v1/memory/sync", body)


def _mcp(args: Any, start_hub: StartHub | None) -> bytes:
    """Serve MCP on stdin/stdout until stdin ends; it never starts a Hub (SPEC §3)."""
    from amux.client.mcp import main as serve_mcp

    serve_mcp()
    return b""  # everything went to stdout as MCP messages


COMMANDS: dict[str, Command] = {
    "search": Command(
        "literal search over your memory scope; use it before answering about past work, "
        "decisions, preferences, conventions or a repeated question",
        Arg("terms", "1-16 literal terms", nargs="+", metavar="TERM"),
        Arg("--prefix", "only documents under this folder (whole segments)"),
        Arg("--limit", "documents to return, 1-20 (default 5)", type=int),
        run=_on_hub(_search)),
    "show": Command(
        "one bounded page of a document (MEMORY.md once per session; the note guide "
        ".amux/guide.md before a first save), or a past version of it (--revision)",
        Arg("path", PATH_HELP),
        Arg("--start-line", "1-based first line", type=int, default=0),
        Arg("--end-line", "1-based last line (inclusive)", type=int, default=0),
        Arg("--offset", "continue at next_offset of a truncated page", type=int),
        Arg("--revision", "the whole document as it was at this revision (from `amux "
            "memory log`; its first 4 or more digits do; @1: before its newest change)"),
        run=_on_hub(_show)),
    "upsert": Command(
        "create or replace a whole document; use it when asked to remember, when a "
        "preference is corrected or a lesson verified (format: .amux/guide.md)",
        Arg("path", PATH_HELP),
        Arg("--expected-revision", "the revision you read (its first 4 or more digits do), "
            "or 'absent' to create", required=True),
        Arg("--file", "read UTF-8 Markdown from this file (default: stdin)"),
        run=_on_hub(_upsert)),
    "forget": Command(
        "delete one document; use it when a memory proves wrong or stale",
        Arg("path", PATH_HELP),
        Arg("--expected-revision", "the revision you read (its first 4 or more digits do)",
            required=True),
        run=_on_hub(_forget)),
    "export": Command(
        "write one whole document to stdout; with --dir, every document of your scope into a "
        "new folder (a MEMORY.md index beside topic files, as the agents keep them)",
        Arg("path", PATH_HELP, nargs="?"),
        Arg("--dir", "write the whole scope into this new or empty folder (files 0600) "
            "instead; importing it back changes nothing", metavar="DIR"),
        Arg("--prefix", "with --dir: only documents under this folder"),
        run=_on_hub(_export)),
    "import": Command(
        "bring notes from an agent's own memory (claude, gemini, qwen, codex, kilo, cline) or "
        "a "
        "folder of Markdown into your amux memory; a dry run unless --apply (docs/sync.md)",
        Arg("source", "claude, gemini, qwen, codex or kilo (their stores in your home), cline "
            "(a repository's memory-bank/, see --path), or the path of a folder of Markdown "
            "(an amux export: ./claude for a folder named like a store); none: "
            "which of the agents' stores this machine has, and how many notes each holds",
            metavar="SOURCE", nargs="?"),
        Arg("--apply", "write: each note one conditional write through the Hub, its source "
            "kept in history (default: only say what would be written where)", flag=True),
        Arg("--overwrite", "replace documents that hold other content at the same path "
            "(default: leave them, reported as differs; history keeps the old version)",
            flag=True),
        Arg("--into", "put everything under this folder of your memory (default: projects/"
            "<id>/ for a project's notes, the top level for the rest)", metavar="PREFIX"),
        Arg("--path", "cline: the repository holding memory-bank/ (default: the current "
            "directory)", metavar="REPO"),
        Arg("--project-id", "the amux project id for an agent's project folder the dry run "
            "could not map to a remote: --project-id=KEY=ID[,KEY=ID...] (with '=': KEY, "
            "the dry run's projects[].source, often starts with '-')", metavar="KEY=ID"),
        run=_on_hub(_import)),
    "list": Command(
        "documents with size, revision and date (for people)",
        Arg("prefix", "only under this folder", nargs="?"),
        Arg("--limit", "at most this many, 1-1000 (default 100)", type=int),
        run=_on_hub(_list)),
    "log": Command(
        "the changes in your memory scope, newest first: when, which revision, what "
        "operation, and who (principal, agent, amux session)",
        Arg("path", "only this document's changes", nargs="?"),
        Arg("--since", "only changes since WHEN: 30m, 12h, 7d, today, or a date/time "
            "such as 2026-12-01 or 2026-12-01T09:30"),
        Arg("--limit", "at most this many, 1-10000 (default 50)", type=int),
        Arg("--before", "only changes older than this one (a commit from an earlier log; "
            "`more: true` there says older changes exist)", metavar="COMMIT"),
        Arg("--session", "only changes made by this amux session (`amux sessions list`)",
            metavar="ID"),
        Arg("--principal", "the Hub's owner only: that principal's scope"),
        run=_on_hub(_log)),
    "diff": Command(
        "a unified diff between two versions of a document (default: its newest change)",
        Arg("path", PATH_HELP),
        Arg("from_revision", "the older version (default: the one before the newest "
            "change; 'absent' for none; @N: N changes before the newest; a revision's "
            "first 4 or more digits do)", nargs="?", metavar="FROM"),
        Arg("to_revision", "the newer version (default: the newest change's)", nargs="?",
            metavar="TO"),
        run=_on_hub(_diff)),
    "restore": Command(
        "write a past version back, as an ordinary conditional write (a forgotten "
        "document too: --expected-revision absent)",
        Arg("path", PATH_HELP),
        Arg("--revision", "the version to restore (from `amux memory log PATH`, its first 4 "
            "or more digits do; @1: the one before the newest change)", required=True),
        Arg("--expected-revision", "the current revision, 'absent', or @0 (the newest in "
            "history: refused if the document changed since)", required=True),
        run=_on_hub(_restore)),
    "purge": Command(
        "the Hub's owner only: remove a version from history (--revision), or all of a "
        "document's past but its current content, e.g. a secret written by hand and since "
        "removed; nothing under AMUX_HOME yields those bytes afterwards",
        Arg("path", PATH_HELP),
        Arg("--revision", "only this version (from `amux memory log PATH`; its first 4 or "
            "more digits do)"),
        Arg("--principal", "in that principal's scope (default: yours)"),
        run=_on_hub(_purge)),
    "edit": Command("edit a document in $VISUAL/$EDITOR, then save it conditionally "
                    "(for people)", Arg("path", PATH_HELP),
        run=_on_hub(_edit)),
    "doctor": Command(
        "read-only health report of your memory scope: entry size and detail, missing "
        "descriptions, duplicates, dangling links, project ids, old documents, quota headroom",
        Arg("--json", "the machine form (JSON) instead of the readable report", flag=True),
        run=_on_hub(_doctor)),
    "remote": Command(
        "the git remotes your memory syncs with (docs/sync.md): add NAME URL (a path, "
        "file://, ssh://host/path or user@host:path; git's ssh agent or credential "
        "helper gives credentials, amux stores none), remove NAME, list",
        Arg("action", "add, remove or list"),
        Arg("name", "the remote's name, e.g. origin", nargs="?"),
        Arg("url", "add: where (any URL git fetches from)", nargs="?"),
        run=_on_hub(_remote)),
    "sync": Command(
        "fetch your memory's history from a git remote, merge it per document (a conflict "
        "keeps both: the remote's text beside yours as NAME.sync-conflict-REV.md, listed "
        "by doctor) and push the result; only when run",
        Arg("remote", "which remote (default: the only one; `amux memory remote add` "
            "adds one)", nargs="?"),
        Arg("--dry-run", "fetch and say what would change, write and push nothing",
            flag=True),
        run=_on_hub(_sync)),
    "mcp": Command("serve the amux MCP tools on stdin/stdout (for agents; never starts a Hub)",
        run=_mcp),
}

PARSER = Parser(
    "amux memory",
    "Search, read and change amux memory through the Hub. Output is JSON (the wire "
    "contract: docs/wire.md in amux's source); errors are JSON on stdout plus one line on "
    "stderr.",
    COMMANDS, {"--pretty": "output for people instead of compact JSON (before or after "
                         "the command)"})


def since(when: str, now: float | None = None) -> float:
    """Seconds since the epoch of `--since WHEN`: an age (30m, 12h, 7d), `today` (local
    midnight), or an ISO date or date-time (local time unless it names its zone)."""
    import time
    from datetime import datetime

    current = time.time() if now is None else now
    text = when.strip().lower()
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
    if text[-1:] in units and text[:-1].isdigit():
        return current - int(text[:-1]) * units[text[-1]]
    if text == "today":
        midnight = time.localtime(current)
        return time.mktime((midnight.tm_year, midnight.tm_mon, midnight.tm_mday, 0, 0, 0, 0,
                            0, -1))
    try:
        return datetime.fromisoformat(when.strip()).timestamp()
    except ValueError:
        raise InvalidArgument(f"--since {when!r}: give an age (30m, 12h, 7d), "
                              "'today', or a date such as 2026-12-01 or 2026-12-01T09:30") from None


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
    """Parse, act, print the result; an error is JSON on stdout plus one stderr line. This
    is every command's edge: a full or read-only disk met on the way is
    `storage_unavailable` (`local_fault`); any other OSError is a bug (`last_resort`)."""
    render: Render | None = None
    try:
        args = parse(argv)
        render = pretty if getattr(args, "pretty", False) else None
        _emit(action(args), render)
        return 0
    except AmuxError as error:
        return report(prog, error, render)
    except OSError as error:
        return report(prog, storage_fault(error, prog), render)


def storage_fault(error: OSError, prog: str) -> AmuxError:
    """At a command's edge: a full, read-only or forbidden disk `error` as
    `storage_unavailable` (`local_fault`), never a usage error; any other OSError is
    raised again, a bug (`last_resort`)."""
    from amux.faults import local_fault

    fault = local_fault(error, str(error.filename or prog))
    if fault is None:
        raise error
    return fault


def report(prog: str, error: AmuxError, render: Render | None = None) -> int:
    """Print an error as Appendix A JSON on stdout and one line on stderr; its exit code.

    The line names the command once: a usage error names its own subcommand instead."""
    _emit(error.to_wire(), render)
    name = error.prog if isinstance(error, UsageError) else prog
    print(f"{name}: {error.code}: {error.message}", file=sys.stderr)
    return error.exit_code


CRASH_LOG_MAX_BYTES = 1024 * 1024
"""The crash log moves to `cli-errors.log.1` (replacing it) before it would pass this."""
CRASH_ENTRY_MAX_CHARS = 64 * 1024
SUMMARY_MAX_CHARS = 300


def crash_log_path() -> str:
    """`<AMUX_HOME>/log/cli-errors.log`, where `last_resort` appends tracebacks."""
    from amux.client.home import home_dir

    return os.path.join(home_dir(), "log", "cli-errors.log")


def last_resort(entry: Callable[[], int]) -> int:
    """Run a command's entry point so that a bug never shows the user a traceback.

    An unexpected exception prints one stderr line, `amux: internal: <Type>: <message>
    (a bug; details in <log>)`, appends the traceback to `crash_log_path()` (dir 0700,
    file 0600) and returns 1. Ctrl-C returns 130 and a closed stdout (BrokenPipeError)
    141, both quietly; SystemExit passes through. With `AMUX_DEBUG=1` a bug is
    re-raised instead, traceback and all (for developers).
    """
    try:
        return entry()
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        if isinstance(exc, BrokenPipeError) and _stdout_closed():
            _silence_stdout()
            return 141
        if os.environ.get("AMUX_DEBUG", "") not in ("", "0"):
            raise
        _report_bug(exc)
        return 1


def _report_bug(exc: BaseException) -> None:
    import contextlib

    summary = " ".join(f"{type(exc).__name__}: {exc}".split())
    if len(summary) > SUMMARY_MAX_CHARS:
        summary = summary[:SUMMARY_MAX_CHARS] + "…"
    try:
        where = f"details in {_log_crash(exc)}"
    except Exception as why:  # the home may be unwritable, or not even computable
        where = f"its traceback could not be logged: {type(why).__name__}: {why}"
    with contextlib.suppress(OSError, ValueError, AttributeError):  # stderr gone too
        print(f"amux: internal: {summary} (a bug; {where})", file=sys.stderr)


def _log_crash(exc: BaseException) -> str:
    """Append `exc`'s traceback to the crash log, rotating it first when full; its path."""
    import time
    import traceback

    from amux import __version__

    path = crash_log_path()
    for directory in (os.path.dirname(os.path.dirname(path)), os.path.dirname(path)):
        os.makedirs(directory, mode=0o700, exist_ok=True)
    trace = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    data = (f"--- {time.strftime('%Y-%m-%dT%H:%M:%S%z')} pid {os.getpid()} amux "
            f"{__version__} python {sys.version.split()[0]}\nargv: {sys.argv!r}\n"
            f"{trace[-CRASH_ENTRY_MAX_CHARS:]}\n").encode("utf-8", "replace")
    try:
        full = os.lstat(path).st_size + len(data) > CRASH_LOG_MAX_BYTES
    except FileNotFoundError:
        full = False
    if full:
        os.replace(path, path + ".1")
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        while data:
            data = data[os.write(fd, data):]
    finally:
        os.close(fd)
    return path


def _stdout_closed() -> bool:
    """Whether stdout is a pipe or socket whose reader has gone (poll says so)."""
    import select

    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # no real stdout: the pipe was another
        return False
    try:
        poller = select.poll()
        poller.register(fd, select.POLLOUT)
        return any(mask & (select.POLLERR | select.POLLHUP) for _fd, mask in poller.poll(0))
    except (AttributeError, OSError, ValueError):  # no poll here: assume it was stdout
        return True


def _silence_stdout() -> None:
    """Point stdout at /dev/null, so flushing it at exit cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (AttributeError, OSError, ValueError):
        pass


def main(argv: list[str] | None = None, pretty: Render = _indented,
         start_hub: StartHub | None = None) -> int:
    """`amux memory …` (and the single-file client's entry), behind `last_resort`."""
    arguments = sys.argv[1:] if argv is None else argv
    return last_resort(lambda: _memory(arguments, pretty, start_hub))


def _memory(arguments: list[str], pretty: Render, start_hub: StartHub | None) -> int:
    return run("amux memory", PARSER.parse, arguments,
               lambda args: COMMANDS[args.command].run(args, start_hub), pretty)


if __name__ == "__main__":
    sys.exit(main())
