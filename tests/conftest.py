"""Shared fixtures. No test may touch the real home: AMUX_HOME and HOME point at temp dirs."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from amux.memory import GLOBAL, Scope, Store
from tests.hubproc import HubProcess
from tests.isolation.world import world  # noqa: F401 (the fixture of tests/isolation and tests/e2e)

END_TO_END = ("tests/e2e/", "tests/isolation/", "tests/eval/test_live.py",
              "tests/test_readme.py")
"""Where the real agent CLIs, real Unix users or the README's every line run: marked
`e2e`, so `pytest -m "not e2e"` is the quick local loop (CI runs everything)."""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    root = Path(str(config.rootpath))
    for item in items:
        where = Path(str(item.path)).relative_to(root).as_posix()
        if where.startswith(END_TO_END):
            item.add_marker(pytest.mark.e2e)


@pytest.fixture(autouse=True)
def isolated_home(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """Point AMUX_HOME and HOME at fresh temp dirs for every test."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("AMUX_HOME", str(home / "amux"))
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    return home


@pytest.fixture
def short_home() -> Iterator[Path]:
    """An AMUX_HOME with a short path, so the Hub's socket path fits a Unix socket."""
    with tempfile.TemporaryDirectory(prefix="amux-", dir="/tmp") as directory:
        yield Path(directory) / "home"


@pytest.fixture
def temp_root(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A TMPDIR of this test's own, made like /tmp: sticky and writable by everyone
    (where the Hub's owner-socket fallback lives, so tests never touch the real one)."""
    root = Path(tempfile.mkdtemp(prefix="amux-tmp-", dir="/tmp"))
    root.chmod(0o1777)
    monkeypatch.setenv("TMPDIR", str(root))
    yield root
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def hub(short_home: Path) -> Iterator[HubProcess]:
    """A real Hub process on a fresh AMUX_HOME (memory still disabled, as by default)."""
    process = HubProcess(short_home)
    yield process
    process.stop()


@pytest.fixture
def memory_hub(hub: HubProcess) -> HubProcess:
    """`hub` with memory.enabled switched on by its owner."""
    hub.call("/v1/admin/config", {"action": "set", "key": "memory.enabled", "value": "true"})
    return hub


@pytest.fixture
def memory_root(tmp_path: Path) -> Path:
    return tmp_path / "memory"


@pytest.fixture
def store(memory_root: Path) -> Iterator[Store]:
    with Store(memory_root) as opened:
        yield opened


@pytest.fixture
def scope() -> Scope:
    return GLOBAL


@pytest.fixture(scope="session")
def package_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One package cache for every Copilot CLI run of the test session (a worker's): the
    executable unpacks 235 MB there on first start, as in a user's warm `~/.cache`."""
    return tmp_path_factory.mktemp("copilot-pkg")
