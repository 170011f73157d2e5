"""Hub configuration: defaults off, typed keys, comments kept, private file."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from amux.errors import InvalidArgument
from amux.hub.config import ConfigFile, HubConfig


def test_defaults_are_off_and_nothing_is_written(tmp_path: Path) -> None:
    config = ConfigFile(tmp_path)
    assert config.load() == HubConfig(memory_enabled=False, isolation_enabled=False)
    assert not config.path.exists()


def test_set_get_and_keep_comments(tmp_path: Path) -> None:
    config = ConfigFile(tmp_path)
    config.path.write_text(
        "# owner's note: keep me\n[memory]\nenabled = false  # off until review\n"
        "[custom]\nthing = 1\n"
    )
    assert config.set("memory.enabled", "true") is True
    assert config.set("isolation.enabled", "on") is True
    text = config.path.read_text()
    assert "# owner's note: keep me" in text
    assert "# off until review" in text
    assert "[custom]\nthing = 1" in text
    assert config.load() == HubConfig(memory_enabled=True, isolation_enabled=True)
    assert stat.S_IMODE(config.path.stat().st_mode) == 0o600
    assert config.set("memory.enabled", "false") is False
    assert config.get("memory.enabled") is False


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("memory.enable", "true", "unknown config key"),
        ("memory.enabled", "maybe", "takes true or false"),
        ("listeners.tls_address", "localhost", "takes host:port"),
        ("listeners.tls_address", "localhost:99999", "takes host:port"),
        ("listeners.shared_socket", "relative/hub.sock", "absolute path"),
        ("history.max_mib", "0", "whole number of at least 1"),
        ("history.keep_days", "a year", "whole number of at least 0"),
    ],
)
def test_bad_keys_and_values_are_refused(
    tmp_path: Path, key: str, value: str, message: str
) -> None:
    config = ConfigFile(tmp_path)
    with pytest.raises(InvalidArgument) as caught:
        config.set(key, value)
    assert message in caught.value.message
    assert not config.path.exists()


def test_a_broken_file_is_reported_not_overwritten(tmp_path: Path) -> None:
    config = ConfigFile(tmp_path)
    config.path.write_text("[memory\nenabled = ")
    with pytest.raises(InvalidArgument, match="not valid TOML"):
        config.load()
    with pytest.raises(InvalidArgument):
        config.set("memory.enabled", "true")
    assert config.path.read_text() == "[memory\nenabled = "
    config.path.write_text('[memory]\nenabled = "yes"\n')
    with pytest.raises(InvalidArgument, match="must be true or false"):
        config.get("memory.enabled")


def test_history_limits_are_whole_numbers_with_defaults(tmp_path: Path) -> None:
    config = ConfigFile(tmp_path)
    assert config.load().history_max_bytes == 256 * 1024 * 1024
    assert config.load().history_keep_seconds == 365 * 86400
    assert config.set("history.max_mib", "64") == 64
    assert config.set("history.keep_days", "0") == 0
    loaded = config.load()
    assert (loaded.history_max_bytes, loaded.history_keep_seconds) == (64 * 1024 * 1024, 0)
    config.path.write_text("[history]\nmax_mib = true\n")
    with pytest.raises(InvalidArgument, match="must be a whole number"):
        config.get("history.max_mib")
