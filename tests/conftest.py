"""Shared fixtures. No test may touch the real home: HOME, AMUX_HOME and the XDG directories
point at a temp dir for every test, and a test that still writes where a real user's amux
or agents keep their state (through the password database, or a child given no HOME) fails."""

from __future__ import annotations

import os
import pwd
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from amux.memory import GLOBAL, Scope, Store
from tests.hubproc import HubProcess
from tests.isolation.world import world  # noqa: F401 (the fixture of tests/isolation and tests/e2e)

END_TO_END = ("tests/e2e/", "tests/isolation/", "tests/eval/test_live.py",
              "tests/test_readme.py", "tests/ui/test_page_browser.py",
              "tests/ui/test_other_user.py")
"""Where the real agent CLIs, real Unix users, a real browser or the README's every line run: marked
`e2e`, so `pytest -m "not e2e"` is the quick local loop (CI runs everything)."""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    root = Path(str(config.rootpath))
    for item in items:
        where = Path(str(item.path)).relative_to(root).as_posix()
        if where.startswith(END_TO_END):
            item.add_marker(pytest.mark.e2e)


REAL_HOMES = sorted({Path(os.environ.get("HOME") or "/nonexistent"),
                     Path(pwd.getpwuid(os.getuid()).pw_dir)})
"""The home of whoever runs the tests, as HOME and the password database name it (read
before any test points HOME elsewhere)."""
WATCHED = (".amux", ".local/share/amux", ".config/amux", ".claude", ".claude.json", ".codex",
           ".gemini", ".qwen", ".pi", ".copilot", ".cache/copilot", ".config/opencode",
           ".local/share/opencode", ".local/state/opencode", ".cache/opencode")
"""Where amux and the agents it launches keep a user's state, under a home."""


def _state_of_real_homes() -> dict[str, tuple[int, int, int, int] | None]:
    """Every path under WATCHED of the real homes, with what changes when it is written
    (a directory's mtime changes with its entries, a file's with its content); None:
    absent. Stats only, nothing read: microseconds where nothing is installed."""
    found: dict[str, tuple[int, int, int, int] | None] = {}
    for home in REAL_HOMES:
        for name in WATCHED:
            top = home / name
            paths = [str(top)]
            if top.is_dir() and not top.is_symlink():
                for directory, dirs, files in os.walk(top):
                    paths += [os.path.join(directory, entry) for entry in (*dirs, *files)]
            for path in paths:
                try:
                    info = os.lstat(path)
                except FileNotFoundError:
                    found[path] = None
                    continue
                found[path] = (info.st_mode, info.st_ino, info.st_size, info.st_mtime_ns)
    return found


@pytest.fixture(autouse=True)
def real_home_untouched() -> Iterator[None]:
    """Fail the test (in its teardown) if anything under the real homes' WATCHED paths was
    made, changed or removed while it ran, its own fixtures' teardown included (this one is
    set up first, so torn down last)."""
    before = _state_of_real_homes()
    yield
    after = _state_of_real_homes()
    if after != before:
        changed = sorted(path for path in before.keys() | after.keys()
                         if before.get(path) != after.get(path))
        pytest.fail("the test touched the real home: " + ", ".join(changed), pytrace=False)


@pytest.fixture(autouse=True)
def isolated_home(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """Point HOME and AMUX_HOME at a fresh temp dir for every test; the XDG directories
    follow HOME (unset, so each takes its default under it)."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("AMUX_HOME", str(home / "amux"))
    for name in ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME",
                 "XDG_RUNTIME_DIR"):
        monkeypatch.delenv(name, raising=False)
    return home


@pytest.fixture
def no_user_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """None of the user's model credentials reaches the test: every variable an adapter
    takes a key or token from (its `key_variables`) is unset."""
    from amux.adapters import ADAPTERS

    for name in {variable for adapter in ADAPTERS.values()
                 for variable in adapter.key_variables}:
        monkeypatch.delenv(name, raising=False)


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
