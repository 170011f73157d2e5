"""`amux ui`: the local page for the memory (docs/ui.md)."""

from __future__ import annotations

import html
import os
import sys
from pathlib import Path
from typing import Any

from amux.client.args import strict_parser
from amux.client.cli import run
from amux.client.home import amux_home


def ui_main(argv: list[str]) -> int:
    parser = strict_parser(
        prog="amux ui",
        description="The memory page: browse, read, search, history, edit and the memory "
        "switch, in your browser. It listens on 127.0.0.1 only and answers only the "
        "address it prints (which carries a key of this start); it acts as you through "
        "your Hub. From another machine: ssh -L PORT:127.0.0.1:PORT this-host, with the "
        "same PORT (`--port`).")
    parser.add_argument("action", nargs="?", choices=("start", "stop", "status"),
                        default="start", help="start (the default; reuses the running "
                        "page), stop, or status")
    parser.add_argument("--port", type=int, help="serve on this port (default: any free one)")
    parser.add_argument("--no-open", action="store_true",
                        help="print the address only; do not open a browser")
    parser.add_argument("--json", action="store_true", help="print JSON for scripts")
    return run("amux ui", parser.parse_args, argv, _act)


def _act(args: Any) -> Any:
    from amux.ui import control

    home = amux_home()
    if args.action == "stop":
        return control.stop(home)
    if args.action == "status":
        record = control.running(home)
        return {"running": False} if record is None else _shown(record, args.json)
    if args.port is not None and not 0 < args.port < 65536:
        from amux.errors import InvalidArgument

        raise InvalidArgument("--port takes a port number, 1-65535")
    record = control.start(home, args.port)
    if not args.no_open:
        record["opened"] = _open(home, control.url(record))
    return _shown(record, args.json)


def _shown(record: dict[str, Any], as_json: bool) -> Any:
    from amux.ui import control

    address = control.url(record)
    if as_json:
        return {"running": True, "url": address, "port": record["port"], "pid": record["pid"],
                **{key: record[key] for key in ("reused", "opened") if key in record}}
    how = "already running" if record.get("reused") else "started"
    return (f"amux memory page ({how}, pid {record['pid']}): {address}\n"
            "Open it in a browser on this machine; `amux ui stop` stops it.\n").encode()


def _open(home: Path, address: str) -> bool:
    """Open the page in the desktop's browser, if there is a desktop. The browser is
    given a 0600 file that forwards to the address, never the address itself: a
    command line is readable by every local user, the key must not be."""
    if not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
            or sys.platform == "darwin"):
        return False
    import webbrowser

    from amux.durable import write_file_atomic
    from amux.ui.control import forward_path

    forward = forward_path(home)
    target = html.escape(address, quote=True)
    write_file_atomic(forward, (
        f'<!doctype html><meta charset="utf-8"><meta http-equiv="refresh" '
        f'content="0; url={target}"><title>amux memory</title>\n').encode(), mode=0o600)
    return webbrowser.open(forward.as_uri())
