"""A scope's health checks behind `amux memory doctor` (issue 7), read-only, against SPEC §2.

`amux memory doctor` asks the Hub (`/v1/memory/doctor`), which runs this over the
caller's scope inside the store: one walk that reads every document once
(`amux.memory.documents`), no writes, no cache. The analysis is pure (`diagnose`
takes the documents and the time), so every check is testable without a Hub. It
reads Markdown with `amux.memory.markdown` (fences, entry detail, links) and
`amux.memory.frontmatter`, and compares documents with `amux.memory.similarity`.
docs/store.md ("The memory doctor") describes each check and why its threshold is
what it is.

Findings are `{category, severity, path, message}` (plus `related` paths for the
checks that compare documents). Severity: `error` = over a hard SPEC §2 limit,
`warning` = worth fixing, `note` = worth a look (a `[[name]]` with no document
marks a note worth writing; an old document may still be true). Findings are not
failures: the command exits 0 whenever it ran.

The answer is bounded: at most `MAX_FINDINGS` findings and `RESPONSE_MAX_BYTES`
of compact JSON, errors first; `counts` always counts every finding, and
`truncated` says some were left out. The work is bounded too: a scope within its
limits is always analysed whole; past twice the limits (offline edits) the rest is
counted from `lstat` or not at all, and `incomplete` says so.
"""

from __future__ import annotations

import math
import posixpath
import re
import unicodedata
from collections import Counter, defaultdict
from typing import Any

from amux.encoding import encoded_size
from amux.memory import conflicts, markdown, similarity
from amux.memory.documents import Collected, Document
from amux.memory.frontmatter import front_matter
from amux.memory.limits import (
    ENTRY_MAX_BYTES,
    ENTRY_MAX_LINES,
    ENTRY_NAME,
    KIB,
    PATH_MAX_BYTES,
    SCAN_MAX_BYTES,
    SCAN_MAX_DIR_ENTRIES,
    SCOPE_MAX_BYTES,
    SCOPE_MAX_DOCUMENTS,
    SEGMENT_MAX_BYTES,
    TOPIC_MAX_BYTES,
)
from amux.memory.lines import line_count
from amux.memory.read import rfc3339

# -- thresholds (docs/store.md explains each) -------------------------------------

NEAR_LIMIT = 0.8
"""A quota at or above this share of its limit is a warning; over the limit, an error."""
STALE_DAYS = 90
NEAR_DUPLICATE_MIN_SHINGLES = 5
"""Documents with fewer shingles (under 7 words) are too short to compare."""

# -- bounds of the answer -------------------------------------------------------------

MAX_FINDINGS = 200
RESPONSE_MAX_BYTES = 64 * KIB
RELATED_MAX = 10
ENTRY_BLOCKS_MAX = 20

SEVERITIES = ("error", "warning", "note")
CATEGORIES = (
    "entry_size", "entry_missing", "entry_detail", "quota", "unreadable",
    "missing_description", "note_format", "duplicate_name", "near_duplicate", "broken_link",
    "project_id", "missing_link", "unindexed", "relative_date", "stale", "permissions",
    "lookalike_name", "sync_conflict",
)
"""Every category, in report order (within one severity)."""


def _key(name: str) -> str:
    return name.strip().casefold()


_STABLE_PROJECT_ID = re.compile(r"[a-z0-9-]+(?:\.[a-z0-9-]+)+(?::[0-9]+)?[-_].+", re.IGNORECASE)
"""A remote slug: a host name with a dot (and optional port), then owner/repository,
e.g. `github.com-org-repo`. A bare `myrepo` is a directory basename."""


# -- the checks -------------------------------------------------------------------------


class _Findings:
    def __init__(self) -> None:
        self.items: list[dict[str, Any]] = []

    def add(self, category: str, severity: str, path: str | None, message: str,
            related: list[str] | None = None) -> None:
        finding: dict[str, Any] = {"category": category, "severity": severity, "path": path,
                                   "message": message}
        if related:
            finding["related"] = related[:RELATED_MAX]
        self.items.append(finding)


def _share(used: int, limit: int) -> str:
    return f"{used:,} of {limit:,} ({100 * used // limit}%)"


def _quota_severity(used: int, limit: int) -> str | None:
    if used > limit:
        return "error"
    return "warning" if used >= NEAR_LIMIT * limit else None


def diagnose(collected: Collected, binding: str, now: float) -> dict[str, Any]:
    """The doctor's answer for one scope (see the module docstring)."""
    documents = collected.documents
    findings = _Findings()
    incomplete = collected.incomplete
    readable = [document for document in documents if document.text is not None]
    entry = next((document for document in documents if document.is_entry), None)

    entry_report = _check_entry(entry, documents, findings)
    quota = _check_quota(collected, entry, findings)
    for document in documents:
        if document.bad_byte is not None:
            findings.add("unreadable", "warning", document.path,
                         f"not valid UTF-8 at byte {document.bad_byte}: `show` refuses it and "
                         "the doctor cannot check it; re-save it as UTF-8")
    parsed = {document.path: front_matter(document.text)[0]
              for document in readable if document.text is not None}
    _check_descriptions(readable, parsed, findings)
    _check_format(readable, parsed, findings)
    _check_dates(readable, findings)
    _check_names(readable, parsed, findings)
    incomplete |= _check_near_duplicates(readable, findings)
    _check_links(documents, readable, parsed, findings)
    _check_index(entry, documents, parsed, findings)
    _check_projects(documents, findings)
    _check_stale(documents, now, findings)
    _check_permissions(collected, findings)
    _check_lookalikes(documents, findings)
    _check_sync_conflicts(documents, findings)
    return _bounded({
        "scope": binding,
        "documents": len(documents),
        "bytes": sum(document.size for document in documents),
        "incomplete": incomplete,
        "entry": entry_report,
        "quota": quota,
        "counts": {},
        "findings": [],
        "truncated": False,
    }, findings.items)


def _check_entry(entry: Document | None, documents: list[Document],
                 findings: _Findings) -> dict[str, Any] | None:
    if entry is None:
        if documents:
            findings.add("entry_missing", "note", ENTRY_NAME,
                         f"no {ENTRY_NAME}: agents read it first in every session; add a few "
                         "broad preferences and pointers to topic areas")
        return None
    for quota, used, limit, unit in (("entry_bytes", entry.size, ENTRY_MAX_BYTES, "bytes"),
                                     ("entry_lines", _entry_lines(entry), ENTRY_MAX_LINES,
                                      "lines")):
        severity = _quota_severity(used, limit)
        if severity == "error":
            findings.add("entry_size", severity, entry.path,
                         f"{used:,} {unit}, over the entry limit of {limit:,} {unit} "
                         f"({quota}): every new session reads it whole; move detail into "
                         "topic documents (writes that grow it are refused)")
        elif severity == "warning":
            findings.add("entry_size", severity, entry.path,
                         f"{_share(used, limit)} {unit} of the entry limit ({quota}): keep it "
                         "to preferences and pointers")
    if entry.text is None:
        return {"path": entry.path, "bytes": entry.size, "lines": _entry_lines(entry),
                "nonblank_lines": None, "detail_lines": None, "detail_bytes": None,
                "detail": []}
    lines = markdown.split_lines(entry.text)
    runs = markdown.entry_detail(entry.text)
    detail_lines = sum(last - first + 1 for _kind, first, last in runs)
    detail_bytes = sum(len(lines[number - 1].encode("utf-8")) + 1
                       for _kind, first, last in runs for number in range(first, last + 1))
    nonblank = sum(1 for line in lines if line.strip())
    if runs:
        where = ", ".join(f"{kind} ({_span(first, last)})" for kind, first, last in runs[:5])
        more = f" and {len(runs) - 5} more" if len(runs) > 5 else ""
        findings.add("entry_detail", "warning", entry.path,
                     f"{detail_lines} of {nonblank} non-blank lines ({detail_bytes:,} of "
                     f"{entry.size:,} bytes) look like detail, not pointers: {where}{more}; "
                     "move it into topic documents and keep one short line pointing there")
    return {"path": entry.path, "bytes": entry.size, "lines": _entry_lines(entry),
            "nonblank_lines": nonblank, "detail_lines": detail_lines,
            "detail_bytes": detail_bytes,
            "detail": [{"kind": kind, "start_line": first, "end_line": last}
                       for kind, first, last in runs[:ENTRY_BLOCKS_MAX]]}


def _entry_lines(entry: Document) -> int:
    return line_count(entry.data) if entry.data is not None else 0


def _span(first: int, last: int) -> str:
    return f"line {first}" if first == last else f"lines {first}-{last}"


def _check_quota(collected: Collected, entry: Document | None,
                 findings: _Findings) -> list[dict[str, Any]]:
    documents = collected.documents
    total = sum(document.size for document in documents)
    topics = [document for document in documents if not document.is_entry]
    largest = max(topics, key=lambda document: document.size, default=None)
    longest = max(documents, key=lambda document: len(document.path.encode("utf-8")),
                  default=None)
    segment_of = {document.path: max(len(segment.encode("utf-8"))
                                      for segment in document.path.split("/"))
                  for document in documents}
    widest = max(documents, key=lambda document: segment_of[document.path], default=None)
    rows: list[dict[str, Any]] = []
    if entry is not None:
        rows.append(_row("entry_bytes", entry.size, ENTRY_MAX_BYTES, entry.path))
        rows.append(_row("entry_lines", _entry_lines(entry), ENTRY_MAX_LINES, entry.path))
    rows += [
        _row("document_bytes", largest.size if largest else 0, TOPIC_MAX_BYTES,
             largest.path if largest else None),
        _row("scope_documents", len(documents), SCOPE_MAX_DOCUMENTS, None),
        _row("scope_bytes", total, SCOPE_MAX_BYTES, None),
        _row("search_scan_bytes", total, SCAN_MAX_BYTES, None),
        _row("search_scan_entries", collected.entries_seen, SCAN_MAX_DIR_ENTRIES, None),
        _row("path_bytes", len(longest.path.encode("utf-8")) if longest else 0,
             PATH_MAX_BYTES, longest.path if longest else None),
        _row("segment_bytes", segment_of[widest.path] if widest else 0, SEGMENT_MAX_BYTES,
             widest.path if widest else None),
    ]
    for document in topics:
        severity = _quota_severity(document.size, TOPIC_MAX_BYTES)
        if severity is not None:
            findings.add("quota", severity, document.path,
                         f"{_share(document.size, TOPIC_MAX_BYTES)} bytes of a topic document "
                         "(document_bytes): split it by subject")
    advice = {
        "scope_documents": "merge or forget documents",
        "scope_bytes": "shorten or forget documents",
        "search_scan_bytes": "a whole-scope search stops early (incomplete) past 8 MiB; "
                             "searches need a --prefix",
        "search_scan_entries": "a whole-scope search stops early (incomplete) past 4,096 "
                               "directory entries; flatten folders or remove stray files",
        "path_bytes": "shorten folder or file names",
        "segment_bytes": "shorten the name",
    }
    for row in rows:
        if row["quota"] not in advice:
            continue
        severity = _quota_severity(row["used"], row["limit"])
        if severity is not None:
            findings.add("quota", severity, row["path"],
                         f"{_share(row['used'], row['limit'])} ({row['quota']}): "
                         f"{advice[row['quota']]}")
    return rows


def _row(quota: str, used: int, limit: int, path: str | None) -> dict[str, Any]:
    return {"quota": quota, "used": used, "limit": limit, "path": path}


def _check_descriptions(readable: list[Document], parsed: dict[str, dict[str, str] | None],
                        findings: _Findings) -> None:
    for document in readable:
        if document.is_entry:
            continue
        fields = parsed[document.path]
        if fields is None:
            findings.add("missing_description", "warning", document.path,
                         "no front matter: add `name`, a one-line `description` and "
                         "`metadata: type:` (the note guide, .amux/guide.md); search matches "
                         "and ranks on them and readers see what it holds")
        elif not fields.get("description"):
            findings.add("missing_description", "warning", document.path,
                         "front matter has no `description`: add one line saying what this "
                         "holds, written for a model deciding whether it is relevant")


NOTE_TYPES = ("user", "feedback", "project", "reference")
"""`metadata.type` of a topic document (the note guide)."""
_TYPE = re.compile(r"(?:^|\s)type:\s*['\"]?([\w-]+)")
_WHY = re.compile(r"\*\*Why:?\*\*:?", re.IGNORECASE)
_HOW = re.compile(r"\*\*How to apply:?\*\*:?", re.IGNORECASE)
_RELATIVE_DATE = re.compile(
    r"\b(?:yesterday|tomorrow|today|tonight|(?:last|next|this) (?:week|month|year|quarter|"
    r"monday|tuesday|wednesday|thursday|friday|saturday|sunday)|\d+ (?:days|weeks|months|"
    r"years) ago|a (?:week|month|year) ago)\b", re.IGNORECASE)
"""Words a reader months later cannot date (the note guide: dates are absolute)."""


def _check_format(readable: list[Document], parsed: dict[str, dict[str, str] | None],
                  findings: _Findings) -> None:
    """The note guide's format (.amux/guide.md), for documents that have front matter: a
    `name`, a known `metadata.type`, and Why / How to apply for feedback and project."""
    for document in readable:
        fields = parsed[document.path]
        if document.is_entry or fields is None or document.text is None:
            continue
        missing = []  # (what to add, whether it is only worth a look)
        if not fields.get("name"):
            missing.append(("`name: short-kebab-case-slug` (what [[links]] name)", True))
        declared = _TYPE.search(fields.get("metadata", ""))
        kind = (declared.group(1) if declared else fields.get("type") or "").lower() or None
        if kind is None:
            missing.append(("`metadata:` with `type: user | feedback | project | reference`",
                            True))
        elif kind not in NOTE_TYPES:
            missing.append((f"a `metadata.type` of user, feedback, project or reference (not "
                            f"{kind!r})", False))
        elif kind in ("feedback", "project"):
            lines = [label for label, pattern in (("**Why:**", _WHY),
                                                  ("**How to apply:**", _HOW))
                     if not pattern.search(document.text)]
            if lines:
                missing.append((f"{' and '.join(lines)} lines (a {kind} note says why and "
                                "when it applies)", False))
        if missing:
            severity = "note" if all(minor for _what, minor in missing) else "warning"
            findings.add("note_format", severity, document.path,
                         "not in the note format: add " + "; ".join(
                             what for what, _minor in missing) +
                         " (the note guide, .amux/guide.md)")


def _check_dates(readable: list[Document], findings: _Findings) -> None:
    for document in readable:
        if document.text is None:
            continue
        lines = markdown.body(document.text)
        prose = "\n".join(line for line, code in zip(lines, markdown.fenced(lines),
                                                     strict=True) if not code)
        found = _RELATIVE_DATE.search(prose)
        if found:
            findings.add("relative_date", "note", document.path,
                         f"{found.group(0)!r} will not say when once time has passed: write "
                         "the absolute date (YYYY-MM-DD) it meant")


def _check_names(readable: list[Document], parsed: dict[str, dict[str, str] | None],
                 findings: _Findings) -> None:
    by_name: dict[str, list[str]] = defaultdict(list)
    shown: dict[str, str] = {}
    for document in readable:
        name = (parsed[document.path] or {}).get("name", "")
        if name:
            by_name[_key(name)].append(document.path)
            shown.setdefault(_key(name), name)
    for key, paths in by_name.items():
        if len(paths) > 1:
            findings.add("duplicate_name", "warning", paths[0],
                         f"name {shown[key]!r} is used by {len(paths)} documents "
                         f"({', '.join(paths[:RELATED_MAX])}): [[{shown[key]}]] is ambiguous "
                         "and they may disagree; merge them or rename one", paths[1:])


def _check_near_duplicates(readable: list[Document], findings: _Findings) -> bool:
    """One finding per document that is near a document earlier in path order."""
    candidates: list[Document] = []
    sets: list[set[int]] = []
    for document in readable:
        assert document.text is not None
        shingle_set = similarity.shingles("\n".join(markdown.body(document.text)))
        if len(shingle_set) >= NEAR_DUPLICATE_MIN_SHINGLES:
            candidates.append(document)
            sets.append(shingle_set)
    pairs, stopped = similarity.near_duplicates(sets)
    best: dict[int, tuple[float, int]] = {}
    for i, j, jaccard in pairs:  # i < j: documents are in path order
        if j not in best or jaccard > best[j][0]:
            best[j] = (jaccard, i)
    for j in sorted(best):
        jaccard, i = best[j]
        findings.add("near_duplicate", "warning", candidates[j].path,
                     f"{math.floor(100 * jaccard)}% the same text as {candidates[i].path}: "
                     "likely one memory written twice, possibly contradicting itself; merge "
                     "them and forget the other", [candidates[i].path])
    return stopped


def _check_links(documents: list[Document], readable: list[Document],
                 parsed: dict[str, dict[str, str] | None], findings: _Findings) -> None:
    paths = {document.path for document in documents}
    keys: set[str] = set()
    for document in documents:
        without = document.path[:-3]
        keys.update((_key(document.path), _key(without), _key(without.rsplit("/", 1)[-1])))
        name = (parsed.get(document.path) or {}).get("name")
        if name:
            keys.add(_key(name))
    for document in readable:
        assert document.text is not None
        wiki, targets = markdown.links(document.text)
        for name in wiki:
            if _key(name) not in keys:
                findings.add("missing_link", "note", document.path,
                             f"[[{name}]] has no document yet (no `name: {name}`, no "
                             f"{name}.md): a note worth writing, or a link to fix")
        folder = posixpath.dirname(document.path)
        for target in targets:
            resolved = [posixpath.normpath(posixpath.join(folder, target)),
                        posixpath.normpath(target)]
            if not any(path in paths for path in resolved):
                findings.add("broken_link", "warning", document.path,
                             f"links to {target}, which does not exist: it was moved or "
                             "forgotten; fix or remove the link")


INDEX_FOLDER_AT = 4
"""From this many documents of one folder without an index line, one finding names the
folder (a line pointing to the folder indexes them all) instead of one per document."""


def _check_index(entry: Document | None, documents: list[Document],
                 parsed: dict[str, dict[str, str] | None], findings: _Findings) -> None:
    """The note guide: MEMORY.md is the index, one line per topic. A document is indexed
    when MEMORY.md links to it, names it (`[[name]]`, its path), or points to a folder
    holding it (a topic area)."""
    if entry is None or entry.text is None:
        return  # entry_missing (or unreadable) says it
    text = entry.text
    wiki, targets = markdown.links(text)
    named = {_key(name) for name in wiki}
    linked = {posixpath.normpath(target) for target in targets}

    seen: dict[str, bool] = {}

    def mentioned(path: str) -> bool:  # as a path of its own, not inside a longer one
        if path not in seen:
            seen[path] = re.search(r"(?<![\w.-])" + re.escape(path) + r"(?![\w-]|\.\w)",
                                   text) is not None
        return seen[path]

    unindexed: defaultdict[str, list[str]] = defaultdict(list)
    for document in documents:
        path = document.path
        if document.is_entry or conflicts.original_of(path) is not None:
            continue
        stem = path[:-3].rsplit("/", 1)[-1]
        name = (parsed.get(path) or {}).get("name")
        folders = [path[:index + 1] for index, char in enumerate(path) if char == "/"]
        if path in linked or mentioned(path) or any(mentioned(folder) for folder in folders) \
                or _key(stem) in named or (name and _key(name) in named):
            continue
        unindexed[posixpath.dirname(path)].append(path)
    for folder, paths in sorted(unindexed.items()):
        if folder and len(paths) >= INDEX_FOLDER_AT:
            findings.add("unindexed", "note", folder + "/",
                         f"{len(paths)} documents here have no line in {ENTRY_NAME}, which every "
                         f"session reads first: agents find them only by searching; add a line "
                         f"pointing to the folder, `- [Topic]({folder}/) — hook`", paths)
            continue
        for path in paths:
            findings.add("unindexed", "note", path,
                         f"no line in {ENTRY_NAME} points here, and every session reads "
                         f"{ENTRY_NAME} first: agents find it only by searching; add one line "
                         f"`- [Title]({path}) — hook` (the note guide)")


def _check_projects(documents: list[Document], findings: _Findings) -> None:
    folders: Counter[str] = Counter()
    for document in documents:
        segments = document.path.split("/")
        if len(segments) >= 3 and segments[0] == "projects":
            folders[segments[1]] += 1
    for folder, count in sorted(folders.items()):
        if not _STABLE_PROJECT_ID.fullmatch(folder):
            findings.add("project_id", "warning", f"projects/{folder}/",
                         f"{folder!r} ({count} document{'s' if count > 1 else ''}) looks like a "
                         "directory basename: name project folders by a stable id such as the "
                         "repository remote (github.com-org-repo), so every checkout finds them")


def _check_stale(documents: list[Document], now: float, findings: _Findings) -> None:
    for document in documents:
        days = int((now - document.mtime) // 86_400)
        if days > STALE_DAYS:
            findings.add("stale", "note", document.path,
                         f"last changed {days} days ago ({rfc3339(document.mtime)}): check it "
                         "still holds, then update or forget it")


def _check_permissions(collected: Collected, findings: _Findings) -> None:
    """SPEC §2: documents 0600 in 0700 folders; anything group/other can reach is a leak
    on a shared machine (the Hub makes them private again when it starts)."""
    for folder, mode in sorted(collected.folders.items()):
        if mode & 0o077:
            what = "folder" if folder else "the scope folder"
            findings.add("permissions", "warning", folder + "/" if folder else "",
                         f"{what} is mode {mode:04o}: other users may list or read it; run "
                         "chmod 700 on it (or restart the Hub, which does)")
    for document in collected.documents:
        if document.mode & 0o077:
            findings.add("permissions", "warning", document.path,
                         f"document is mode {document.mode:04o}: other users may read it; run "
                         "chmod 600 on it (or restart the Hub, which does)")


def _check_lookalikes(documents: list[Document], findings: _Findings) -> None:
    """Paths that differ only in Unicode normalisation (NFC vs NFD) look identical to a
    person and an agent, yet are distinct documents that can silently disagree."""
    by_form: dict[str, list[str]] = defaultdict(list)
    for document in documents:
        if not document.path.isascii():
            by_form[unicodedata.normalize("NFC", document.path)].append(document.path)
    for paths in by_form.values():
        if len(paths) > 1:
            findings.add("lookalike_name", "warning", paths[0],
                         f"{len(paths)} documents have this same-looking path in different "
                         "Unicode forms (NFC/NFD): merge them into one and forget the others",
                         paths[1:])


def _check_sync_conflicts(documents: list[Document], findings: _Findings) -> None:
    """Conflict copies a sync left: both texts are kept until a person or agent merges."""
    for document in documents:
        original = conflicts.original_of(document.path)
        if original is not None:
            findings.add("sync_conflict", "warning", document.path,
                         f"a sync kept the remote's text of {original} here, both sides having "
                         f"changed the same lines: merge it into {original} with an ordinary "
                         f"upsert, then `amux memory forget {document.path}`", [original])


def _bounded(report: dict[str, Any], items: list[dict[str, Any]]) -> dict[str, Any]:
    """Fill `findings` in report order within `MAX_FINDINGS` and `RESPONSE_MAX_BYTES`."""
    rank = {category: number for number, category in enumerate(CATEGORIES)}
    items.sort(key=lambda item: (SEVERITIES.index(item["severity"]), rank[item["category"]],
                                 item["path"] or ""))
    counts: Counter[str] = Counter(item["category"] for item in items)
    report["counts"] = {category: counts[category] for category in CATEGORIES
                        if counts[category]}
    size = encoded_size(report)
    kept: list[dict[str, Any]] = []
    for item in items:
        cost = encoded_size(item) + 1
        if len(kept) == MAX_FINDINGS or size + cost > RESPONSE_MAX_BYTES:
            report["truncated"] = True
            break
        kept.append(item)
        size += cost
    report["findings"] = kept
    return report
