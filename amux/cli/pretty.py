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
    from rich.table import Column, Table

    console = Console(markup=False)  # every cell is data: a `[/]` in it is text, not markup
    if isinstance(value, dict) and "results" in value:
        table = Table("path", "terms", "hits", show_lines=True)
        from amux.encoding import encoded_size
        from amux.memory.limits import RESPONSE_MAX_BYTES

        uncut = encoded_size(value) <= RESPONSE_MAX_BYTES - HIT_MAX_BYTES  # no hit cut
        for result in value["results"]:
            hits = "\n".join(f"{hit['line']}: {hit['snippet']}" for hit in result["hits"])
            table.add_row(result["path"], ", ".join(result["matched_terms"]),
                          hits or _no_hits(result["path_hit"], uncut))
        console.print(table)
        notes = [f"{value['scanned_files']} files scanned"]
        if value["incomplete"]:
            notes.append("INCOMPLETE: narrow --prefix or change terms")
        if value["truncated"]:
            notes.append("more hits or documents were left out")
        console.print("; ".join(notes), style="dim")
    elif isinstance(value, dict) and "findings" in value and "quota" in value:  # doctor
        console.print(f"scope {value['scope']}: {value['documents']} documents, "
                      f"{value['bytes']:,} bytes")
        table = Table("severity", "category", "path", "message", show_lines=True)
        for finding in value["findings"]:
            table.add_row(finding["severity"], finding["category"], finding["path"] or "(scope)",
                          finding["message"])
        console.print(table if value["findings"] else "No findings.")
        quota = Table("quota", "used", "limit", "path")
        for row in value["quota"]:
            quota.add_row(row["quota"], f"{row['used']:,}", f"{row['limit']:,}", row["path"] or "")
        console.print(quota)
        if value["truncated"] or value["incomplete"]:
            console.print("more findings than shown, or only part of the scope was checked: "
                          "see --json", style="dim")
    elif isinstance(value, dict) and "documents" in value:
        table = Table("path", "bytes", "revision", "modified", "by")
        for document in value["documents"]:
            changed = document.get("changed")  # null: history has not seen this content
            table.add_row(document["path"], str(document["bytes"]), document["revision"][:12],
                          document["modified_at"], "" if changed is None else _who(changed))
        console.print(table)
        if value["truncated"]:
            console.print("more documents exist: narrow the prefix or raise --limit", style="dim")
    elif isinstance(value, dict) and "sessions" in value:
        sessions = value["sessions"]

        def whole(name: str, key: str) -> Column:  # an id cut short cannot be resumed
            widest = max([len(name), *(len(str(session[key])) for session in sessions)])
            return Column(name, no_wrap=True, min_width=widest)

        table = Table(whole("id", "id"), Column("agent", overflow="fold"),
                      whole("started", "started"), Column("cwd", overflow="fold"),
                      Column("memory binding", overflow="fold"), whole("resumable", "resumable"),
                      box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
        for session in value["sessions"]:
            table.add_row(session["id"], session["agent"].rpartition("/")[2],  # whole: `show`
                          session["started"], session["cwd"],
                          _short_binding(session["binding"]),
                          "yes" if session["resumable"] else "no")
        console.print(table if value["sessions"] else "No sessions yet: `amux run AGENT` "
                      "starts one.")
    elif isinstance(value, dict) and "changes" in value:  # memory log
        table = Table("when", "operation", "path", "revision", "bytes", "who",
                      box=box.SIMPLE_HEAD, pad_edge=False)
        for change in value["changes"]:
            table.add_row(change["at"], change["operation"], change["path"],
                          (change["revision"] or "")[:12], f"{change['bytes']:,}", _who(change))
        console.print(table if value["changes"] else "No changes recorded.")
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
    """"alice (claude, session 2026…)", or "hand edit" for a change made outside the Hub."""
    if change["principal"] is None:
        return "hand edit"
    launched = ", ".join(part for part in (change["agent"], change["session"] and
                                           f"session {change['session']}") if part)
    return f"{change['principal']} ({launched})" if launched else str(change["principal"])


def _short_binding(binding: str | None) -> str:
    """`principal:<sha256>` cut to 12 hex digits (`sessions show` has it whole)."""
    if binding is None:
        return "none"
    kind, colon, digest = binding.partition(":")
    return f"{kind}:{digest[:12]}…" if colon and len(digest) > 12 else binding
