"""Revisions as a person types them, resolved to what the Hub takes.

People copy revisions from `amux memory log --pretty` and `diff`, which show 12 hex
digits, or count changes back (`@1`). The Hub's wire contract stays exact (a whole
SHA-256, or `absent`); this is the one place the CLI turns a short form into one, from
the document's history, as git takes a short commit. Standard library only.
"""

from __future__ import annotations

from amux.client.transport import HubClient
from amux.errors import InvalidArgument, NotFound

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

ABSENT = "absent"
WHOLE_DIGITS = 64
SHORTEST_PREFIX = 4
"""The fewest hex digits a revision may be given by (git's shortest abbreviation)."""
SHOWN_DIGITS = 12
"""Digits of a revision shown to people (`log --pretty`, `diff`), here when listing."""
_HEX = frozenset("0123456789abcdef")
_PAGE = 10_000
"""Changes asked for per log call (the Hub's maximum)."""


def log(client: HubClient, body: dict[str, Any], principal: str | None = None) -> Any:
    """The history log `body` asks for: of the caller's scope, or (the Hub's owner)
    `principal`'s."""
    if principal is not None:
        return client.call("/v1/admin/history", {**body, "action": "log",
                                                  "principal": principal})
    return client.call("/v1/memory/log", body)


def resolve(client: HubClient, path: str, given: str | None, option: str,
            principal: str | None = None) -> str | None:
    """The revision `given` for `option` (as the person typed it: `--revision`) means,
    as the Hub takes it.

    `absent` and a whole revision are kept; `@N` is the revision `path` had N changes
    before its newest in history (`@0` the newest; a forgotten document's newest is
    `absent`; not `~N`, which shells expand); 4 to 63 hex digits are the one revision,
    of `path`'s history or its current content, that starts with them. Case is ignored.
    An ambiguous prefix is `invalid_argument` listing the candidates; one that matches
    nothing is `not_found`.
    """
    if given is None or given == ABSENT:
        return given
    text = given.lower()
    if text.startswith("@") and text[1:].isdigit():
        return _counted_back(client, path, int(text[1:]), given, option, principal)
    if not SHORTEST_PREFIX <= len(text) <= WHOLE_DIGITS or not _HEX.issuperset(text):
        raise InvalidArgument(
            f"{option} {given!r}: give a revision (at least {SHORTEST_PREFIX} of its hex "
            f"digits, as `amux memory log {path}` shows them), 'absent', or @N for N "
            "changes before the newest (@0 the newest, @1 the one before)")
    if len(text) == WHOLE_DIGITS:
        return text
    return _by_prefix(client, path, text, option, principal)


def _counted_back(client: HubClient, path: str, steps: int, given: str, option: str,
                  principal: str | None) -> str:
    changes = log(client, {"path": path, "limit": steps + 1}, principal)["changes"]
    if len(changes) <= steps:
        raise NotFound(f"{option} {given}: {path} has {len(changes)} change(s) in history; "
                       f"`amux memory log {path}` lists them")
    return str(changes[steps]["revision"])


def _by_prefix(client: HubClient, path: str, prefix: str, option: str,
               principal: str | None) -> str:
    found: dict[str, str] = {}  # each revision starting with `prefix`: how it came to be
    if principal is None:  # the content on disk, which history may not have seen yet
        current = client.call("/v1/memory/get", {"path": path, "start_line": 1,
                                                 "end_line": 1})
        if current["exists"] and current["revision"].startswith(prefix):
            found[current["revision"]] = "current"
    body: dict[str, Any] = {"path": path, "limit": _PAGE}
    while True:
        page = log(client, body, principal)
        for change in page["changes"]:
            revision = str(change["revision"])
            if revision.startswith(prefix) and revision not in found:
                found[revision] = f"{change['operation']} at {change['at']}"
        if not page["more"]:
            break
        body["before"] = page["changes"][-1]["commit"]
    if len(found) == 1:
        return next(iter(found))
    where = "" if principal is None else f" --principal {principal}"
    if not found:
        raise NotFound(f"{option} {prefix}: no version of {path} has a revision starting "
                       f"with it; `amux memory log {path}{where}` lists them")
    digits = SHOWN_DIGITS
    while len({revision[:digits] for revision in found}) < len(found):
        digits += SHOWN_DIGITS
    listed = ", ".join(f"{revision[:digits]} ({how})" for revision, how in found.items())
    raise InvalidArgument(f"{option} {prefix} is ambiguous: {len(found)} versions of "
                          f"{path} start with it: {listed}; give more of its digits")
