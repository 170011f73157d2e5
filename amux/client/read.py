"""A document read from the Hub whole, page by page, as one version of it."""

from __future__ import annotations

from amux.client.transport import HubClient
from amux.errors import from_wire


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
            raise from_wire(
                "revision_conflict",
                f"{path} changed while it was being read; nothing was written, try again",
                {"current_revision": page["revision"]},
            )
        revision = page["revision"]
        pages.append(page["content"])
        if not page["truncated"]:
            return "".join(pages), revision
        offset = page["next_offset"]
