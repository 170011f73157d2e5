"""What amux declares in pyproject.toml is what it imports: a runtime dependency that no
module of `amux` imports is dead weight for every user, and an import that is not
declared breaks a fresh install."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def third_party_imports(package: Path) -> set[str]:
    """Top-level names of every module `package`'s sources import, standard library and
    amux itself left out."""
    names = set()
    for source in package.rglob("*.py"):
        for node in ast.walk(ast.parse(source.read_text(), str(source))):
            if isinstance(node, ast.Import):
                names.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names.add(node.module.split(".")[0])
    return names - set(sys.stdlib_module_names) - {"amux", "__future__"}


def normalized(requirement: str) -> str:
    return re.split(r"[<>=!~\[; ]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def test_runtime_dependencies_are_exactly_what_amux_imports() -> None:
    declared = {normalized(requirement) for requirement in tomllib.loads(
        (ROOT / "pyproject.toml").read_text())["project"]["dependencies"]}
    distributions = packages_distributions()
    imported = {normalized(distributions[name][0]) for name in third_party_imports(ROOT / "amux")}
    assert imported == declared


def test_the_client_imports_the_standard_library_only() -> None:
    assert third_party_imports(ROOT / "amux" / "client") == set()
