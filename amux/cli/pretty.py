"""`--pretty` for people: memory results and sessions rendered with rich (installed
`amux` only).

The standard-library client falls back to indented JSON; this module is what the
installed command passes instead, and it is imported only when `--pretty` is used.
"""

from __future__ import annotations

TYPE_CHECKING = False  # imported on every `amux memory` call: no `typing` at run time
if TYPE_CHECKING:
    from typing import Any


def render(value: Any) -> None:
    from rich import box
    from rich.console import Console

    from amux.cli.fit import CUT, TRIM, WRAP, Col, table

    console = Console(markup=False)  # every cell is data: a `[/]` in it is text, not markup
    if isinstance(value, dict) and "results" in value:
        from amux.encoding import encoded_size
        from amux.memory.limits import RESPONSE_MAX_BYTES

        uncut = encoded_size(value) <= RESPONSE_MAX_BYTES - HIT_MAX_BYTES  # no hit cut
        console.print(table(console, (Col("path", CUT), Col("terms", WRAP), Col("hits", WRAP)), (
            (result["path"], ", ".join(result["matched_terms"]),
             "\n".join(f"{hit['line']}: {hit['snippet']}" for hit in result["hits"])
             or _no_hits(result["path_hit"], uncut)) for result in value["results"]),
            show_lines=True))
        notes = [f"{value['scanned_files']} files scanned"]
        if value["incomplete"]:
            notes.append("INCOMPLETE: narrow --prefix or change terms")
        if value["truncated"]:
            notes.append("more hits or documents were left out")
        console.print("; ".join(notes), style="dim")
    elif isinstance(value, dict) and "findings" in value and "quota" in value:  # doctor
        console.print(f"scope {value['scope']}: {value['documents']} documents, "
                      f"{value['bytes']:,} bytes")
        console.print(table(console, (Col("severity"), Col("category"), Col("path", CUT),
                                      Col("message", WRAP)), (
            (finding["severity"], finding["category"], finding["path"] or "(scope)",
             finding["message"]) for finding in value["findings"]), show_lines=True)
            if value["findings"] else "No findings.")
        console.print(table(console, (Col("quota"), Col("used"), Col("limit"),
                                      Col("path", CUT)), (
            (row["quota"], f"{row['used']:,}", f"{row['limit']:,}", row["path"] or "")
            for row in value["quota"])))
        if value["truncated"] or value["incomplete"]:
            console.print("more findings than shown, or only part of the scope was checked: "
                          "see --json", style="dim")
    elif isinstance(value, dict) and "notes" in value and "summary" in value:  # import
        _import_report(console, value)
    elif isinstance(value, dict) and "paths" in value and "dir" in value:  # export --dir
        console.print(f"{value['documents']} documents, {value['bytes']:,} bytes written to "
                      f"{value['dir']}")
        if value["truncated"]:
            console.print("more documents exist: export the rest by --prefix", style="dim")
    elif isinstance(value, dict) and "documents" in value:
        console.print(table(console, (Col("path", CUT), Col("bytes"), Col("revision"),
                                      Col("modified", optional=2),
                                      Col("by", TRIM, optional=1)), (
            (document["path"], str(document["bytes"]), document["revision"][:12],
             document["modified_at"],
             "" if document.get("changed") is None else _who(document["changed"]))
            for document in value["documents"])))  # changed null: history has not seen it
        if value["truncated"]:
            console.print("more documents exist: narrow the prefix or raise --limit", style="dim")
    elif isinstance(value, dict) and "sessions" in value:
        # the id whole (a cut one cannot be resumed); `started` goes first (the id starts
        # with the same time), then the binding; the agent's name (`show` has its path)
        console.print(table(console, (Col("id"), Col("agent", TRIM), Col("started", optional=1),
                                      Col("cwd", CUT), Col("memory binding", TRIM, optional=2),
                                      Col("resumable")), (
            (session["id"], session["agent"].rpartition("/")[2], session["started"],
             session["cwd"], _short_binding(session["binding"]),
             "yes" if session["resumable"] else "no") for session in value["sessions"]),
            box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
            if value["sessions"] else "No sessions yet: `amux run AGENT` starts one.")
    elif isinstance(value, dict) and "changes" in value:  # memory log
        console.print(table(console, (Col("when"), Col("operation"), Col("path", CUT),
                                      Col("revision"), Col("bytes", optional=1),
                                      Col("who", TRIM)), (
            (change["at"], change["operation"], change["path"], (change["revision"] or "")[:12],
             f"{change['bytes']:,}", _who(change)) for change in value["changes"]),
            box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
            if value["changes"] else "No changes recorded.")
        if value.get("more"):
            console.print(f"older changes exist: --before {value['changes'][-1]['commit']}",
                          style="dim")
    elif isinstance(value, dict) and "diff" in value:  # memory diff
        console.print(value["diff"] or f"{value['path']}: no difference", markup=False,
                      highlight=False, end="")
    elif isinstance(value, dict) and "content" in value and "exists" in value:  # show
        console.rule(f"{value['path']}  lines {value['start_line']}-{value['end_line']} "
                     f"of {value['total_lines']}  rev {value['revision'][:12]}")
        console.print(value["content"], markup=False, highlight=False, end="")
        if value["stale_note"]:
            console.print(value["stale_note"], style="yellow")
        if value["truncated"]:
            console.print(f"(truncated: continue with --offset {value['next_offset']})",
                          style="dim")
    else:
        console.print_json(data=value)


HIT_MAX_BYTES = 1500
"""The most one hit takes in a search answer: a 240-byte snippet, each byte escaped to at
most 6, and its fields."""


def _no_hits(path_hit: bool, uncut: bool) -> str:
    """What a search result without hits says: its path alone matched, or its lines were
    left out to fit the answer's 8 KiB (hits go first, from the last result), which only
    an answer within one hit of that size can have had (`uncut`: not)."""
    if path_hit and uncut:
        return "(path only: no line matches)"
    return "(its path, or lines left out to fit)" if path_hit else "(lines left out to fit)"


def _who(change: dict[str, Any]) -> str:
    """"alice (claude, session 2026…)", "alice (import claude /…/x.md)" for an imported
    change, or "hand edit" for a change made outside the Hub."""
    if change["principal"] is None:
        return "hand edit"
    launched = ", ".join(part for part in (change["agent"], change["session"] and
                                           f"session {change['session']}",
                                           change.get("source")) if part)
    return f"{change['principal']} ({launched})" if launched else str(change["principal"])


def _short_binding(binding: str | None) -> str:
    """`principal:<sha256>` cut to 12 hex digits (`sessions show` has it whole)."""
    if binding is None:
        return "none"
    kind, colon, digest = binding.partition(":")
    return f"{kind}:{digest[:12]}…" if colon and len(digest) > 12 else binding


def _import_report(console: Any, value: Any) -> None:
    """`amux memory import --pretty`: each project's id and why, a row per note (what
    happens to it, where, from which file, and why not), what was skipped, the counts."""
    import os

    from amux.cli.fit import CUT, WRAP, Col, table

    for project in value["projects"]:
        console.print(f"project {project['source']} -> projects/{project['id']}/: "
                      f"{project['why']}")
    root = value["root"]

    def why(note: dict[str, Any]) -> str:
        error = note.get("error")
        if error is not None and error["code"] == "secret_detected":
            return f"secret_detected (line {error['line']}, {error['rule']}): never stored"
        if error is not None:
            return f"{error['code']}: {error['message'].split('; ')[0].split(': ')[0]}"
        if "duplicate_of" in note:
            return f"already at {note['duplicate_of']}"
        if note["action"] == "differs":
            return "amux holds other content there (--overwrite replaces it)"
        return ""

    if value["notes"]:
        console.print(table(console, (Col("action"), Col("path", CUT),
                                      Col("from", CUT, optional=2),
                                      Col("why", WRAP, optional=1)), (
            (note["action"], note["path"], os.path.relpath(note["source"], root)
             if note["source"].startswith(root) else note["source"], why(note))
            for note in value["notes"])))
    for skipped in value["skipped"]:
        console.print(f"skipped {skipped['source']}: {skipped['reason']}", style="dim")
    counts = ", ".join(f"{count} {action}" for action, count in value["summary"].items())
    verb = "written" if value["applied"] else "a dry run: nothing written (--apply writes)"
    console.print(f"{value['source']} ({root}): {counts or 'nothing'}; {verb}")
