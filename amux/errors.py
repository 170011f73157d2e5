"""The one error tree of amux, with the stable codes of SPEC Appendix A.

Every failure a caller can see is an `AmuxError` subclass carrying a stable `code`, the
HTTP status the Hub answers with and the exit code the CLI returns; the store, the Hub,
the client, the launcher and the materializer all raise these, by type. A class names
only its code: its status and exit code are that code's row of `ERROR_TABLE`, the one
table (a code without a row fails at import). Errors cross the wire as
`{"error": {"code", "message", ...details}}` (`to_wire`), and come back as the class of
their code (`from_wire`; a code this side does not know keeps its code, exit 1). Codes
are public: add, never rename. Standard library only: the single-file client carries it.

    AmuxError
    ├── InvalidArgument      invalid_argument      (what the caller gave is wrong: exit 2)
    │   ├── UsageError                             (a command line its parser refused:
    │   │                                           amux.client.args)
    │   ├── PlanRefused                            (an agent's arguments or set-up amux
    │   │   ├── ResumeFlagRefused                   cannot launch with: amux.adapters.base)
    │   │   └── EndpointRefused
    │   └── AgentNotStarted                        (the agent named cannot be started:
    │                                               amux.launcher.supervise)
    ├── InvalidPath          invalid_path          (+ reason)
    │   └── FileInTheWay                           (a file where a folder must be:
    │                                               amux.memory.fs)
    ├── NotUtf8              not_utf8
    ├── RevisionConflict     revision_conflict     (+ current_revision)
    ├── MemoryDisabled       memory_disabled
    ├── HubUnreachable       hub_unreachable       (no HTTP status: no Hub answered;
    │                                               + peer_uid, hub_uid for an impostor)
    ├── HubBusy              hub_busy              (a connection or byte cap: nothing was
    │                                               done, retry)
    ├── Unauthenticated      unauthenticated
    ├── Forbidden            forbidden
    ├── BindingMismatch      binding_mismatch
    ├── QuotaExceeded        quota_exceeded        (+ quota, limit, actual)
    ├── SecretDetected       secret_detected       (+ line, rule, fingerprint, findings;
    │                                               never the secret)
    ├── NotFound             not_found
    ├── SyncFailed           sync_failed           (git could not fetch or push: amux.hub.sync)
    ├── StorageUnavailable   storage_unavailable   (+ errno: disk full, read-only,
    │                                               permission, quota)
    └── InternalError        internal
        └── RootLocked       internal              (a second exclusive opener)
"""

from __future__ import annotations

TYPE_CHECKING = False  # `typing` is not imported at run time: the client starts fast
if TYPE_CHECKING:
    from typing import Any

ERROR_TABLE: dict[str, tuple[int | None, int]] = {
    # code: (HTTP status, or None when no Hub answered; CLI exit code)
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
    "sync_failed": (502, 9),
    "internal": (500, 1),
}


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


_BY_CODE: dict[str, type[AmuxError]] = {}
"""Each code's class, the first defined with it (a refinement such as `UsageError` keeps its
parent's code): what a received error becomes (`from_wire`)."""


class AmuxError(Exception):
    """Base of every error amux reports to a caller: `code`, `message`, and `details`, the
    extra wire fields beside them."""

    code = "internal"
    http_status: int | None = ERROR_TABLE["internal"][0]
    exit_code = ERROR_TABLE["internal"][1]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.http_status, cls.exit_code = ERROR_TABLE[cls.code]
        _BY_CODE.setdefault(cls.code, cls)

    def __init__(self, message: str, details: dict[str, Any] | None = None) -> None:
        message = _capped(message)
        super().__init__(message)
        self.message = message
        self.details: dict[str, Any] = details or {}

    def to_wire(self) -> dict[str, Any]:
        """The JSON error body of SPEC Appendix A: `{"error": {"code", "message", ...}}`."""
        return {"error": {"code": self.code, "message": self.message, **self.details}}


def from_wire(code: str, message: str, details: dict[str, Any] | None = None) -> AmuxError:
    """The error a wire body names, as the class of its code; a code this side does not
    know (a newer Hub's) keeps its code, with exit status 1."""
    kind = _BY_CODE.get(code)
    error = Exception.__new__(kind or AmuxError)
    AmuxError.__init__(error, message, details)
    if kind is None:
        error.code, error.http_status, error.exit_code = code, None, 1
    return error


class InvalidArgument(AmuxError):
    code = "invalid_argument"


class InvalidPath(AmuxError):
    code = "invalid_path"

    def __init__(self, path: str, reason: str) -> None:
        self.reason = _capped(reason)
        super().__init__(f"invalid memory path {shown(path)}: {self.reason}",
                         {"reason": self.reason})


class NotUtf8(AmuxError):
    code = "not_utf8"


class RevisionConflict(AmuxError):
    code = "revision_conflict"

    def __init__(self, path: str, expected: str, current: str) -> None:
        super().__init__(
            f"{path}: expected revision {expected} but the document is at {current}; "
            "re-read it, merge, and retry with the current revision",
            {"current_revision": current},
        )
        self.current_revision = current


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
        super().__init__(message, {"quota": quota, "limit": limit, "actual": actual})
        self.quota = quota
        self.limit = limit
        self.actual = actual


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
        extra: dict[str, Any] = {"line": line, "rule": rule}
        if fingerprint is not None:
            extra["fingerprint"] = fingerprint
        if findings is not None:
            extra["findings"] = findings
        super().__init__(message, extra)
        self.line = line
        self.rule = rule
        self.fingerprint = fingerprint
        self.findings = findings


class NotFound(AmuxError):
    code = "not_found"


class SyncFailed(AmuxError):
    """git could not reach or update a sync's remote (`amux memory sync`); its message
    says git's, with any password or token removed."""

    code = "sync_failed"


class StorageUnavailable(AmuxError):
    """The file system refused a write or a start-up step: full, read-only, no permission.

    Carries the symbolic `errno` (`ENOSPC`, `EROFS`, `EACCES`, `EDQUOT`, ...) so the
    caller knows what to fix; nothing was changed (a write left no temp file behind).
    """

    code = "storage_unavailable"

    def __init__(self, message: str, errno_name: str) -> None:
        super().__init__(message, {"errno": errno_name})
        self.errno_name = errno_name


class InternalError(AmuxError):
    code = "internal"


class RootLocked(InternalError):
    """Another process holds the memory root's exclusive lock (one Hub per root)."""
