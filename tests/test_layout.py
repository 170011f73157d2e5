"""How the tests are laid out: a test module imports helpers, never another test module.

Helpers live in modules not named `test_*`: the suite's own at the top of `tests/` (the
Hub process, hostile users, waiting, adapter plans, the mock model...), one directory's
beside its tests (`tests/hub/apihub.py`, `tests/e2e/story.py`...); fixtures that several
directories need are shared by `tests/conftest.py`."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def imported_test_modules(source: str) -> set[str]:
    """The test modules (`tests….test_*`) that `source` imports, a function's imports too."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
        else:
            continue
        found.update(name for name in names if name.startswith("tests.")
                     and name.split(".")[-1].startswith("test_"))
    return found


def test_the_finder_sees_a_test_module_imported() -> None:
    assert imported_test_modules("from tests.e2e.test_agents import amux_run\n"
                                 "def f():\n    import tests.hub.test_api\n"
                                 "from tests.hub import test_loop\n"
                                 "from tests.wait import wait_until\n") == {
        "tests.e2e.test_agents", "tests.hub.test_api", "tests.hub.test_loop"}


def test_no_test_module_imports_another() -> None:
    found = {str(path.relative_to(TESTS)): imported for path in sorted(TESTS.rglob("*.py"))
             if (imported := imported_test_modules(path.read_text(encoding="utf-8")))}
    assert found == {}
