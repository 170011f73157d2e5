"""A document read from the Hub whole, page by page, as one version of it."""

from __future__ import annotations

from amux.client.transport import HubClient
from amux.errors import from_wire

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any


def read_pages(get: Callable[[dict[str, Any]], Any], path: str,
               ) -> tuple[str, dict[str, Any]] | None:
    """The whole document and the `get` answer of its first page (revision, modified_at,
    stale_note), through `get(body)`; None when it does not exist.

    Refuses (`revision_conflict`) if the revision changes between pages, so the text
    is always one version of the document.
    """
    pages: list[str] = []
    first: dict[str, Any] | None = None
    offset = None
    while True:
        page = get({"path": path, "offset": offset})
        if not page["exists"]:
            if first is None:
                return None
            page["revision"] = "absent"
        if first is not None and page["revision"] != first["revision"]:
            raise from_wire(
                "revision_conflict",
                f"{path} changed while it was being read; nothing was written, try again",
                {"current_revision": page["revision"]},
            )
        first = first or page
        pages.append(page["content"])
        if not page["truncated"]:
            return "".join(pages), first
        offset = page["next_offset"]


def read_whole(client: HubClient, path: str) -> tuple[str, str] | None:
    """The whole document and its revision (`read_pages` over `/v1/memory/get`)."""
    found = read_pages(lambda body: client.call("/v1/memory/get", body), path)
    return None if found is None else (found[0], found[1]["revision"])
