"""`amux memory import` and `amux memory export --dir`: notes in and out of a scope, through
the Hub (docs/sync.md).

Import compares every note with what the scope holds (one `list`, then the revisions:
the SHA-256 of the bytes, so "the same" means byte for byte), and decides one action per
note: `create`, `overwrite` (only with `--overwrite`), or nothing: `same` (amux holds it
already), `duplicate` (amux, or this import, holds the same bytes at another path),
`differs` (amux, or an earlier file of this import, holds other content there). A dry
run asks the Hub to check each write (`dry_run`: the secret guard, quotas, paths) and
writes nothing; `--apply` writes each note as one conditional upsert carrying its
`source`, which history keeps. Running it twice writes nothing the second time: every
note is then `same`.

Export writes each document's bytes as the Hub holds them into a new folder, in the
shape the agents share (a `MEMORY.md` index beside topic files with front matter), so
importing an export finds every note `same`.
"""

from __future__ import annotations

import hashlib
import os

from amux.client.read import read_whole
from amux.client.stores import Gathered
from amux.client.transport import HubClient
from amux.errors import AmuxError, InvalidArgument, from_wire

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

SCOPE_MAX_DOCUMENTS = 1024
SCOPE_MAX_BYTES = 16 * 1024 * 1024
"""SPEC §2's scope limits: the Hub enforces them; a dry run uses them to predict where an
import would stop (each dry-run check sees the scope as it is, not as the import grows it)."""
LIST_MAX = 1000
SOURCE_MAX_CHARS = 512
"""The longest provenance the Hub keeps (`source`, docs/wire.md)."""

PER_NOTE = frozenset({"secret_detected", "invalid_path", "not_utf8", "revision_conflict",
                      "invalid_argument"})
"""Errors that refuse one note; the import goes on with the next. Any other error (the Hub
gone, memory switched off, the disk full, the scope's quota) stops it."""
NOTE_QUOTAS = frozenset({"document_bytes", "entry_bytes", "entry_lines"})
"""Quotas of one document (the next note may fit); a scope's quota stops the import."""


def revision(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _listing(client: HubClient) -> tuple[dict[str, tuple[str, int]], bool]:
    """The scope's documents (path: revision, bytes) and whether the list was cut short."""
    answer = client.call("/v1/memory/list", {"limit": LIST_MAX})
    return ({document["path"]: (document["revision"], document["bytes"])
             for document in answer["documents"]}, bool(answer["truncated"]))


def _current(client: HubClient, path: str) -> str | None:
    page = client.call("/v1/memory/get", {"path": path, "end_line": 1})
    return str(page["revision"]) if page["exists"] else None


def provenance(store: str, source: str) -> str:
    """The `source` a write carries: `import <store> <file>`, printable and at most
    `SOURCE_MAX_CHARS` (a longer file name keeps its end)."""
    shown = "".join(char if char.isprintable() else "?" for char in source)
    head = f"import {store} "
    room = SOURCE_MAX_CHARS - len(head)
    return head + (shown if len(shown) <= room else "…" + shown[-(room - 1):])


def _refusal(error: AmuxError) -> dict[str, Any]:
    return {"code": error.code, "message": error.message, **error.details}


def _stops(error: AmuxError) -> bool:
    if error.code in PER_NOTE:
        return False
    return not (error.code == "quota_exceeded" and error.details.get("quota") in NOTE_QUOTAS)


def run_import(client: HubClient, gathered: Gathered, apply: bool,
               overwrite: bool) -> dict[str, Any]:
    """The report of importing `gathered`: a dry run, or (`apply`) the writes made. An
    error that stops the import is raised with the report so far as its `import` field
    (what was written, what was not attempted)."""
    existing, truncated = _listing(client)
    holder = {rev: path for path, (rev, _size) in sorted(existing.items(), reverse=True)}
    documents = len(existing)
    size = sum(bytes_ for _rev, bytes_ in existing.values())
    notes: list[dict[str, Any]] = []
    planned: dict[str, str] = {}
    sources: dict[str, str] = {}
    for note in gathered.notes:
        data = note.content.encode("utf-8")
        rev = revision(data)
        entry: dict[str, Any] = {"source": note.source, "path": note.path, "revision": rev,
                                 "bytes": len(data)}
        if note.path in existing:
            current: str | None = existing[note.path][0]
        else:
            current = _current(client, note.path) if truncated else None
        if current == rev:
            entry["action"] = "same"
        elif rev in planned or (rev in holder and holder[rev] != note.path):
            entry["action"] = "duplicate"
            entry["duplicate_of"] = planned.get(rev) or holder[rev]
        elif note.path in sources:  # two source files for one path (two checkouts of a repo)
            entry["action"] = "differs"
            entry["same_path_as"] = sources[note.path]
        elif current is not None and not overwrite:
            entry["action"] = "differs"
            entry["current_revision"] = current
        else:
            entry["action"] = "create" if current is None else "overwrite"
            entry["expected_revision"] = current or "absent"
            planned[rev] = note.path
        sources.setdefault(note.path, note.source)
        notes.append(entry)
    report: dict[str, Any] = {
        "source": gathered.store, "root": gathered.root, "applied": apply,
        "projects": [{"source": project.key, "path": project.path, "id": project.id,
                      "why": project.why} for project in gathered.projects],
        "notes": notes,
        "skipped": [{"source": skipped.source, "reason": skipped.reason}
                    for skipped in gathered.skipped],
    }
    stopped: AmuxError | None = None
    for index, entry in enumerate(notes):
        note = gathered.notes[index]
        if entry["action"] not in ("create", "overwrite"):
            continue
        if stopped is not None:
            entry["action"] = "not_attempted"
            continue
        old_size = 0 if entry["action"] == "create" else existing.get(entry["path"], ("", 0))[1]
        body = {"path": entry["path"], "content": note.content,
                "expected_revision": entry.pop("expected_revision"),
                "source": provenance(gathered.store, entry["source"])}
        if not apply:
            body["dry_run"] = True
            predicted = _predicted_quota(documents + (entry["action"] == "create"),
                                         size - old_size + entry["bytes"], old_size,
                                         entry["bytes"])
            if predicted is not None:
                entry["error"] = predicted
                entry["action"] = "refused"
                continue
        try:
            client.call("/v1/memory/upsert", body)
        except AmuxError as error:
            if not apply and error.code in ("hub_unreachable", "hub_busy", "memory_disabled",
                                            "unauthenticated", "forbidden", "binding_mismatch"):
                raise
            entry["error"] = _refusal(error)
            if apply and _stops(error):
                entry["action"] = "not_written"
                stopped = error
            else:
                entry["action"] = "refused"
            continue
        documents += entry["action"] == "create"
        size += entry["bytes"] - old_size
        if apply:
            entry["action"] = "created" if entry["action"] == "create" else "replaced"
    summary: dict[str, int] = {}
    for entry in notes:
        summary[entry["action"]] = summary.get(entry["action"], 0) + 1
    summary["skipped"] = len(gathered.skipped)
    report["summary"] = summary
    if stopped is not None:
        stopped.details["import"] = report
        raise stopped
    return report


def _predicted_quota(documents: int, total: int, old_size: int,
                     new_size: int) -> dict[str, Any] | None:
    """The scope quota a dry run predicts this write would meet, as the Hub would say it."""
    if old_size == 0 and documents > SCOPE_MAX_DOCUMENTS:
        return _refusal(from_wire("quota_exceeded", (
            f"the scope would hold {documents} documents; the limit is {SCOPE_MAX_DOCUMENTS}: "
            "merge or forget documents first (predicted: the notes before this one count)"),
            {"quota": "scope_documents", "limit": SCOPE_MAX_DOCUMENTS, "actual": documents}))
    if total > SCOPE_MAX_BYTES and new_size > old_size:
        return _refusal(from_wire("quota_exceeded", (
            f"the scope would hold {total} bytes; the limit is {SCOPE_MAX_BYTES} bytes "
            "(16 MiB) (predicted: the notes before this one count)"),
            {"quota": "scope_bytes", "limit": SCOPE_MAX_BYTES, "actual": total}))
    return None


def export_dir(client: HubClient, directory: str, prefix: str | None) -> dict[str, Any]:
    """Write every document of the scope (under `prefix`) into the new or empty folder
    `directory`: its bytes as the Hub holds them, at its path (folders 0700, files 0600:
    memory is private). Each document is one version of it (`read_whole`); each file is
    whole or absent (temp and rename), not fsynced (a copy to read, as `cp` makes one)."""
    target = os.path.abspath(directory)
    if os.path.lexists(target) and (not os.path.isdir(target) or os.listdir(target)):
        raise InvalidArgument(f"{directory} exists and is not an empty folder: export into a "
                              "new or empty one (nothing there is overwritten)")
    body: dict[str, Any] = {"limit": LIST_MAX}
    if prefix is not None:
        body["path_prefix"] = prefix
    listing = client.call("/v1/memory/list", body)
    paths = [document["path"] for document in listing["documents"]]
    while listing["truncated"] and listing["documents"]:  # the next page, after the last
        listing = client.call("/v1/memory/list", {**body, "after": paths[-1]})
        paths += [document["path"] for document in listing["documents"]]
    os.makedirs(target, mode=0o700, exist_ok=True)
    written: list[str] = []
    total = 0
    for path in paths:
        whole = read_whole(client, path)
        if whole is None:  # forgotten since the list
            continue
        data = whole[0].encode("utf-8")
        _write_private(target, path, data)
        written.append(path)
        total += len(data)
    return {"dir": target, "documents": len(written), "bytes": total, "paths": written,
            "truncated": bool(listing["truncated"])}


def _write_private(root: str, path: str, data: bytes) -> None:
    parts = path.split("/")
    folder = root
    for part in parts[:-1]:
        folder = os.path.join(folder, part)
        os.makedirs(folder, mode=0o700, exist_ok=True)
    final = os.path.join(folder, parts[-1])
    temp = final + ".amux-export-tmp"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        with os.fdopen(fd, "wb") as handle:  # no fsync: a copy to read, not the store
            handle.write(data)
        os.replace(temp, final)
    except BaseException:
        if os.path.lexists(temp):
            os.unlink(temp)
        raise
