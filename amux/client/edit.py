"""`amux memory edit PATH`: a person edits a document in their editor, saved safely.

The document is copied to a private temp file, `$VISUAL`/`$EDITOR` (else `vi`)
opens it, and the result is saved with the revision that was read. If the
document changed meanwhile, nothing is overwritten: the edit is kept in its temp
file, the current version is written beside it, and both paths are reported so
the person can merge and save again.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from amux.client.read import read_whole
from amux.client.transport import HubClient
from amux.errors import AmuxError, InvalidArgument, NotUtf8


def _editor() -> list[str]:
    command = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
    return shlex.split(command)


def edit(client: HubClient, path: str) -> dict[str, Any]:
    whole = read_whole(client, path)
    text, revision = whole if whole is not None else ("", "absent")
    handle, name = tempfile.mkstemp(prefix="amux-edit-", suffix="-" + Path(path).name)
    draft = Path(name)
    with os.fdopen(handle, "w", encoding="utf-8", newline="") as file:
        file.write(text)
    try:
        done = subprocess.run([*_editor(), str(draft)], check=False)
    except OSError as exc:
        raise InvalidArgument(f"cannot start the editor: {exc}") from None
    if done.returncode != 0:
        raise InvalidArgument(f"the editor exited with {done.returncode}; "
                              f"nothing was saved (your text is in {draft})")
    edited = draft.read_bytes()
    try:
        content = edited.decode("utf-8")
    except UnicodeDecodeError:
        raise NotUtf8(f"the edit is not UTF-8; nothing saved ({draft})") from None
    if content == text:
        draft.unlink()
        return {"path": path, "unchanged": True, "revision": revision}
    try:
        saved: dict[str, Any] = client.call("/v1/memory/upsert", {
            "path": path, "content": content, "expected_revision": revision,
        })
    except AmuxError as error:
        if error.code == "revision_conflict":
            current = read_whole(client, path)
            theirs = draft.with_name(draft.name + ".current")
            theirs.write_text(current[0] if current else "", encoding="utf-8")
            error.message = (f"{path} changed while you edited it; nothing was overwritten. "
                             f"Your edit: {draft}  current version: {theirs}  "
                             "merge them and save again")
            error.details.update({"edit_file": str(draft), "current_file": str(theirs)})
        else:
            error.message += f" (your edit is kept in {draft})"
        raise
    draft.unlink()
    return saved
