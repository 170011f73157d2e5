"""File primitives: the one temp-and-replace helper for files outside the store."""

from __future__ import annotations

import stat
from pathlib import Path

from amux.memory.durable import TEMP_PREFIX, write_file_atomic


def test_write_file_atomic_replaces_with_private_mode(tmp_path: Path) -> None:
    target = tmp_path / "config.toml"
    target.write_text("old")
    target.chmod(0o644)
    write_file_atomic(target, b"new = true\n")
    assert target.read_bytes() == b"new = true\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["config.toml"]  # no temp left behind
    write_file_atomic(tmp_path / "state.json", b"{}", mode=0o640)
    assert stat.S_IMODE((tmp_path / "state.json").stat().st_mode) == 0o640
    assert not any(p.name.startswith(TEMP_PREFIX) for p in tmp_path.iterdir())
