"""OS errors that mean the storage refused, reported as `StorageUnavailable` (exit 8).

A write that fails because the disk is full, the file system is read-only or the
Hub's user lacks permission is not a bug in the Hub: the caller is told which
(`errno`), that nothing was changed, and what the Hub's owner must fix. Every
writer of the Hub (documents, configuration, identities, start-up) reports such
a failure through `storage_faults`, so the text is the same wherever it happened.
Any other `OSError` is left alone: it is a bug, reported as `internal`. The user's own
commands (a launch, the CLI) say the same of their own files (`local_fault`), at their
edge: a full disk is never a usage error.
"""

from __future__ import annotations

import errno
from collections.abc import Iterator
from contextlib import contextmanager

from amux.errors import StorageUnavailable

_PERMISSION = ("the Hub's user lacks permission there",
               "give the Hub's user its own directories back (owner, mode 0700)")
_CAUSES: dict[int, tuple[str, str]] = {
    errno.ENOSPC: ("the Hub's disk is full", "free space on it"),
    errno.EDQUOT: ("the Hub's user is over its disk quota", "free space or raise the quota"),
    errno.EFBIG: ("a file grew past the Hub's file-size limit", "raise that limit (ulimit -f)"),
    errno.EROFS: ("the Hub's storage is read-only", "remount it read-write"),
    errno.EACCES: _PERMISSION,
    errno.EPERM: _PERMISSION,
    errno.EIO: ("the Hub's disk reported an I/O error", "check the disk (dmesg)"),
}
"""errno → (what happened, what the Hub's owner does about it)."""

CHANGE_NOT_SAVED = ("your change was not saved and what was stored is unchanged (retry once "
                    "this is fixed)")


def storage_error(error: OSError, where: object,
                  outcome: str = CHANGE_NOT_SAVED) -> StorageUnavailable | None:
    """`error` as `StorageUnavailable` naming its errno, or None when it is no storage fault."""
    cause = _CAUSES.get(error.errno or 0)
    if cause is None:
        return None
    name = errno.errorcode[error.errno or 0]
    what, fix = cause
    return StorageUnavailable(
        f"{what} ({name} at {where}): {outcome}; the Hub's owner must {fix}", name)


@contextmanager
def storage_faults(where: object, outcome: str = CHANGE_NOT_SAVED) -> Iterator[None]:
    """Re-raise a storage `OSError` in the block as `StorageUnavailable`; others pass."""
    try:
        yield
    except OSError as error:
        mapped = storage_error(error, where, outcome)
        if mapped is None:
            raise
        raise mapped from None


def local_fault(error: OSError, doing: str) -> StorageUnavailable | None:
    """A storage `error` met by a command of the user's own (a launch, the CLI) while
    `doing` something (`cannot write X`): `storage_unavailable` naming the errno and the
    fix (exit 8, not a usage error); None for any other error."""
    cause = _CAUSES.get(error.errno or 0)
    if cause is None:
        return None
    name = errno.errorcode[error.errno or 0]
    fix = ("check who owns that path and its mode" if cause is _PERMISSION
           else cause[1])
    return StorageUnavailable(f"{doing}: {error.strerror or error} ({name}); {fix}", name)
