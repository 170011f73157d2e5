"""The one error tree of amux, with the stable codes of SPEC Appendix A.

Every failure a caller can see is an `AmuxError` subclass carrying a stable `code`,
the HTTP status the Hub answers with and the exit code the CLI returns. A class
names only its code: status and exit code are that code's row of
`amux.client.wire.ERROR_TABLE`, the one table the client shares (a code without a
row fails at import), so they never drift apart.

    AmuxError
    ├── InvalidArgument      invalid_argument
    ├── InvalidPath          invalid_path          (+ reason)
    ├── NotUtf8              not_utf8
    ├── RevisionConflict     revision_conflict     (+ current_revision)
    ├── MemoryDisabled       memory_disabled
    ├── HubUnreachable       hub_unreachable       (no HTTP status: no Hub answered)
    ├── HubBusy              hub_busy              (a connection or byte cap: nothing was
    │                                               done, retry)
    ├── Unauthenticated      unauthenticated
    ├── Forbidden            forbidden
    ├── BindingMismatch      binding_mismatch
    ├── QuotaExceeded        quota_exceeded        (+ quota, limit, actual)
    ├── SecretDetected       secret_detected       (+ line, rule, fingerprint, findings;
    │                                               never the secret)
    ├── NotFound             not_found
    ├── StorageUnavailable   storage_unavailable   (+ errno: disk full, read-only,
    │                                               permission, quota)
    └── InternalError        internal
        └── RootLocked       internal              (a second exclusive opener)
"""

from __future__ import annotations

from amux.client.wire import ERROR_TABLE

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, ClassVar

MESSAGE_MAX_CHARS = 1000
"""An error message never grows with the input it complains about (a 600 KB path was
echoed whole): longer messages are cut, and quoted input is cut sooner (`shown`)."""
SHOWN_MAX_CHARS = 120


def shown(value: object, limit: int = SHOWN_MAX_CHARS) -> str:
    """`repr(value)` for an error message, cut to about `limit` characters."""
    text = repr(value)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text):,} characters)"


def _capped(message: str) -> str:
    if len(message) <= MESSAGE_MAX_CHARS:
        return message
    return message[:MESSAGE_MAX_CHARS] + f"… (message cut, {len(message):,} characters)"


class AmuxError(Exception):
    """Base of every error amux reports to a caller."""

    code: ClassVar[str] = "internal"
    http_status: ClassVar[int | None] = ERROR_TABLE["internal"][0]
    exit_code: ClassVar[int] = ERROR_TABLE["internal"][1]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.http_status, cls.exit_code = ERROR_TABLE[cls.code]

    def __init__(self, message: str) -> None:
        message = _capped(message)
        super().__init__(message)
        self.message = message

    def details(self) -> dict[str, Any]:
        """Extra wire fields beside `code` and `message` (none by default)."""
        return {}

    def to_wire(self) -> dict[str, Any]:
        """The JSON error body of SPEC Appendix A: `{"error": {"code", "message", ...}}`."""
        return {"error": {"code": self.code, "message": self.message, **self.details()}}


class InvalidArgument(AmuxError):
    code = "invalid_argument"


class InvalidPath(AmuxError):
    code = "invalid_path"

    def __init__(self, path: str, reason: str) -> None:
        self.reason = _capped(reason)
        super().__init__(f"invalid memory path {shown(path)}: {self.reason}")

    def details(self) -> dict[str, Any]:
        return {"reason": self.reason}


class NotUtf8(AmuxError):
    code = "not_utf8"


class RevisionConflict(AmuxError):
    code = "revision_conflict"

    def __init__(self, path: str, expected: str, current: str) -> None:
        super().__init__(
            f"{path}: expected revision {expected} but the document is at {current}; "
            "re-read it, merge, and retry with the current revision"
        )
        self.current_revision = current

    def details(self) -> dict[str, Any]:
        return {"current_revision": self.current_revision}


class MemoryDisabled(AmuxError):
    code = "memory_disabled"


class HubUnreachable(AmuxError):
    code = "hub_unreachable"


class HubBusy(AmuxError):
    """The Hub is at a cap on connections, TLS handshakes or unauthenticated bytes in flight.

    Nothing was read past the request's head and nothing was done; retrying in a
    moment is safe (docs/hub.md "Framing and limits").
    """

    code = "hub_busy"


class Unauthenticated(AmuxError):
    code = "unauthenticated"


class Forbidden(AmuxError):
    code = "forbidden"


class BindingMismatch(AmuxError):
    code = "binding_mismatch"


class QuotaExceeded(AmuxError):
    code = "quota_exceeded"

    def __init__(self, quota: str, limit: int, actual: int, message: str) -> None:
        super().__init__(message)
        self.quota = quota
        self.limit = limit
        self.actual = actual

    def details(self) -> dict[str, Any]:
        return {"quota": self.quota, "limit": self.limit, "actual": self.actual}


class SecretDetected(AmuxError):
    """Content that looks like a credential (`amux.memory.secretguard`).

    The wire error names the first finding's 1-based `line`, `rule` and
    `fingerprint`, and lists every finding (at most 20) in `findings`; it never
    holds the value itself. The fingerprint is what the Hub's owner allows.
    """

    code = "secret_detected"

    def __init__(self, line: int, rule: str, fingerprint: str | None = None,
                 findings: list[dict[str, Any]] | None = None, total: int | None = None,
                 ) -> None:
        listed = len(findings) if findings else 1
        more = (total or listed) - 1
        message = (
            f"line {line} looks like a credential (rule {rule}); secrets are not stored in "
            "memory: remove it, or write where it is kept instead (a vault entry, an "
            "environment variable's name)"
        )
        if more:
            message += f"; {more} more finding{'s' if more > 1 else ''}"
            message += " in `findings`" if more < listed else f" (`findings` lists {listed})"
        if fingerprint is not None:
            message += (
                ". If it is not a secret, the Hub's owner can allow exactly this value in "
                f"this scope: amux system secrets allow {fingerprint}"
            )
        super().__init__(message)
        self.line = line
        self.rule = rule
        self.fingerprint = fingerprint
        self.findings = findings

    def details(self) -> dict[str, Any]:
        extra: dict[str, Any] = {"line": self.line, "rule": self.rule}
        if self.fingerprint is not None:
            extra["fingerprint"] = self.fingerprint
        if self.findings is not None:
            extra["findings"] = self.findings
        return extra


class NotFound(AmuxError):
    code = "not_found"


class StorageUnavailable(AmuxError):
    """The file system refused a write or a start-up step: full, read-only, no permission.

    Carries the symbolic `errno` (`ENOSPC`, `EROFS`, `EACCES`, `EDQUOT`, ...) so the
    caller knows what to fix; nothing was changed (a write left no temp file behind).
    """

    code = "storage_unavailable"

    def __init__(self, message: str, errno_name: str) -> None:
        super().__init__(message)
        self.errno_name = errno_name

    def details(self) -> dict[str, Any]:
        return {"errno": self.errno_name}


class InternalError(AmuxError):
    code = "internal"


class RootLocked(InternalError):
    """Another process holds the memory root's exclusive lock (one Hub per root)."""
