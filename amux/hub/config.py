"""The Hub's system configuration: `<AMUX_HOME>/config.toml` (SPEC §3).

Read and written with tomlkit so the owner's comments and layout survive every
`amux system config set`. Only known keys can be set, each with a typed value;
unknown keys already in the file are kept untouched. Writes go through the one
temp-and-replace helper and leave the file 0600.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tomlkit
from tomlkit.exceptions import TOMLKitError

from amux.durable import write_file_atomic
from amux.errors import InvalidArgument

CONFIG_NAME = "config.toml"

Value = bool | str | int

DEFAULTS: dict[str, Value] = {
    "memory.enabled": False,
    "isolation.enabled": False,
    "listeners.shared_socket": "",
    "listeners.tls_address": "",
    "listeners.tls_cert": "",
    "listeners.tls_key": "",
    "history.max_mib": 256,
    "history.keep_days": 365,
}
"""Every settable key with its default (its type is the default's type); memory and
isolation start off (SPEC §3); an empty shared socket path means no shared socket.
History keeps at most `history.max_mib` MiB per scope and drops versions older than
`history.keep_days` days (0: none), never a document's newest (docs/store.md "History")."""

_HEADER = """\
# amux Hub configuration. Change it with `amux system config set KEY VALUE`
# (the Hub re-reads it at once) or edit it by hand and run `amux hub reload`.
"""


@dataclass(frozen=True)
class HubConfig:
    """The effective settings (file values over defaults)."""

    memory_enabled: bool = False
    isolation_enabled: bool = False
    shared_socket: str = ""
    """Absolute path of the socket isolated runs reach, or "" for none (applies at start)."""
    tls_address: str = ""
    """`host:port` of the TLS listener for remote Runtimes, or "" for none."""
    tls_cert: str = ""
    tls_key: str = ""
    history_max_bytes: int = 256 * 1024 * 1024
    history_keep_seconds: float = 365 * 86400.0
    """0: versions are never dropped for their age."""


def _parse(key: str, value: str) -> Value:
    if key == "listeners.tls_address":
        host, colon, port = value.rpartition(":")
        if value and (not colon or not host or not port.isdigit() or not 0 <= int(port) < 65536):
            raise InvalidArgument(f"{key} takes host:port (or \"\" for none), got {value!r}")
        return value
    default = DEFAULTS[key]
    if isinstance(default, int) and not isinstance(default, bool):
        least = 1 if key == "history.max_mib" else 0
        if not value.strip().isdigit() or int(value) < least:
            raise InvalidArgument(f"{key} takes a whole number of at least {least}, got {value!r}")
        return int(value)
    if isinstance(default, str):
        if value and not value.startswith("/"):
            raise InvalidArgument(f"{key} takes an absolute path (or \"\" for none), got {value!r}")
        return value
    lowered = value.strip().lower()
    if lowered in ("true", "on", "yes", "1"):
        return True
    if lowered in ("false", "off", "no", "0"):
        return False
    raise InvalidArgument(f"{key} takes true or false, got {value!r}")


def _check_key(key: str) -> None:
    if key not in DEFAULTS:
        known = ", ".join(sorted(DEFAULTS))
        raise InvalidArgument(f"unknown config key {key!r}; known keys: {known}")


class ConfigFile:
    """`config.toml` under an AMUX_HOME: typed reads, comment-preserving writes."""

    def __init__(self, home: Path) -> None:
        self.path = home / CONFIG_NAME

    def _document(self) -> tomlkit.TOMLDocument:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return tomlkit.parse(_HEADER)
        try:
            return tomlkit.parse(text)
        except TOMLKitError as exc:
            raise InvalidArgument(f"{self.path} is not valid TOML: {exc}") from None

    def get(self, key: str) -> Value:
        """The effective value of `key` (its default when the file does not set it)."""
        _check_key(key)
        table_name, name = key.split(".", 1)
        table: Any = self._document().get(table_name)
        if table is None or name not in table:
            return DEFAULTS[key]
        value = table[name]
        expected = type(DEFAULTS[key])
        if not isinstance(value, expected) or (expected is int and isinstance(value, bool)):
            kind = {bool: "true or false", int: "a whole number"}.get(expected, "a string")
            raise InvalidArgument(f"{self.path}: {key} must be {kind}, found {value!r}")
        return expected(value)

    def set(self, key: str, value: str) -> Value:
        """Set `key` from its text form, keep every comment, and return the new value."""
        _check_key(key)
        parsed = _parse(key, value)
        document = self._document()
        table_name, name = key.split(".", 1)
        if table_name not in document:
            document.add(table_name, tomlkit.table())
        table: Any = document[table_name]
        table[name] = parsed
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        write_file_atomic(self.path, tomlkit.dumps(document).encode("utf-8"))
        return parsed

    def load(self) -> HubConfig:
        """All effective settings at once."""
        return HubConfig(
            memory_enabled=bool(self.get("memory.enabled")),
            isolation_enabled=bool(self.get("isolation.enabled")),
            shared_socket=str(self.get("listeners.shared_socket")),
            tls_address=str(self.get("listeners.tls_address")),
            tls_cert=str(self.get("listeners.tls_cert")),
            tls_key=str(self.get("listeners.tls_key")),
            history_max_bytes=int(self.get("history.max_mib")) * 1024 * 1024,
            history_keep_seconds=int(self.get("history.keep_days")) * 86400.0,
        )
