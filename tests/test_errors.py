"""The wire contract of SPEC Appendix A: codes, HTTP statuses and exit codes, pinned."""

from __future__ import annotations

import pytest

from amux import errors
from amux.errors import ERROR_TABLE

PINNED = {
    "invalid_argument": (400, 2),
    "invalid_path": (400, 2),
    "not_utf8": (400, 2),
    "revision_conflict": (409, 3),
    "memory_disabled": (503, 4),
    "hub_unreachable": (None, 4),
    "hub_busy": (503, 4),
    "unauthenticated": (401, 5),
    "forbidden": (403, 5),
    "binding_mismatch": (403, 5),
    "quota_exceeded": (413, 6),
    "secret_detected": (422, 7),
    "not_found": (404, 1),
    "storage_unavailable": (507, 8),
    "sync_failed": (502, 9),  # issue 39: `amux memory sync`'s git failed (added, docs/wire.md)
    "internal": (500, 1),
}


def test_error_table_is_the_appendix() -> None:
    assert ERROR_TABLE == PINNED


def _subclasses(base: type[errors.AmuxError]) -> list[type[errors.AmuxError]]:
    return [cls for sub in base.__subclasses__() for cls in (sub, *_subclasses(sub))]


def test_every_class_has_its_codes_status_and_exit_code() -> None:
    classes = _subclasses(errors.AmuxError)
    assert {cls.code for cls in classes} == set(PINNED)
    for cls in (errors.AmuxError, *classes):
        assert (cls.http_status, cls.exit_code) == PINNED[cls.code], cls.__name__


def test_a_code_without_a_row_fails_at_definition() -> None:
    with pytest.raises(KeyError, match="no_such_code"):
        type("Stray", (errors.AmuxError,), {"code": "no_such_code"})


def test_extra_fields_are_on_the_wire() -> None:
    conflict = errors.RevisionConflict("a.md", "absent", "f" * 64).to_wire()["error"]
    assert conflict["code"] == "revision_conflict"
    assert conflict["current_revision"] == "f" * 64
    quota = errors.QuotaExceeded("scope_bytes", 10, 11, "too big").to_wire()["error"]
    assert (quota["quota"], quota["limit"], quota["actual"]) == ("scope_bytes", 10, 11)
    secret = errors.SecretDetected(3, "aws-key").to_wire()["error"]
    assert (secret["line"], secret["rule"]) == (3, "aws-key")
    path = errors.InvalidPath("x", "empty path").to_wire()["error"]
    assert path["reason"] == "empty path"


def test_root_locked_is_internal() -> None:
    assert errors.RootLocked("held").code == "internal"
    assert issubclass(errors.RootLocked, errors.AmuxError)
