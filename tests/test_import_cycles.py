"""The modules of `amux` import each other without a cycle: a cycle means two modules that
cannot be understood, tested or loaded one without the other, and hides a piece that
belongs in a module of its own.

Every import counts, a function's too: an import moved into a function only defers a
cycle, it does not break one. Imports under `if TYPE_CHECKING:` do not count (they never
run). An import names one module: `from a.b import c` the module `a.b.c` if there is one,
else `a.b`; the packages above the module it names are not counted (Python runs them
first, whole, before the module)."""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from pathlib import Path

import amux

PACKAGE = Path(amux.__file__).resolve().parent


def module_names() -> dict[str, Path]:
    """Every module of `amux` by its dotted name (a package by its own)."""
    names = {}
    for source in PACKAGE.rglob("*.py"):
        parts = source.relative_to(PACKAGE.parent).with_suffix("").parts
        names[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = source
    return names


def _run_imports(nodes: Iterable[ast.AST]) -> Iterator[ast.Import | ast.ImportFrom]:
    """The imports in and below `nodes` that can run: all but those under
    `if TYPE_CHECKING:` (its `else:` runs)."""
    for node in nodes:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) \
                and node.test.id == "TYPE_CHECKING":
            yield from _run_imports(node.orelse)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        else:
            yield from _run_imports(ast.iter_child_nodes(node))


def imported(name: str, text: str, modules: dict[str, Path]) -> set[str]:
    """The modules of `amux` that module `name`, whose source is `text`, imports."""
    package = name if modules[name].name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in _run_imports([ast.parse(text, str(modules[name]))]):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name in modules)
            continue
        base = node.module or ""
        if node.level:
            anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
            base = ".".join([*anchor, *([base] if base else [])])
        for alias in node.names:
            if f"{base}.{alias.name}" in modules:
                found.add(f"{base}.{alias.name}")
            elif base in modules:
                found.add(base)
    return found - {name}


def a_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of `graph` as the modules along it (the first again at its end), else None."""
    done: set[str] = set()
    path: list[str] = []

    def visit(name: str) -> list[str] | None:
        if name in path:
            return [*path[path.index(name):], name]
        if name in done:
            return None
        path.append(name)
        for other in sorted(graph[name]):
            if (cycle := visit(other)) is not None:
                return cycle
        path.pop()
        done.add(name)
        return None

    return next((cycle for name in sorted(graph) if (cycle := visit(name))), None)


def test_the_finder_sees_a_cycle_through_a_function_level_import() -> None:
    assert a_cycle({"a": {"b"}, "b": {"c"}, "c": {"b"}}) == ["b", "c", "b"]
    assert a_cycle({"a": {"b"}, "b": set()}) is None
    source = ("TYPE_CHECKING = False\nif TYPE_CHECKING:\n    from amux.adapters import base\n"
              "else:\n    import amux.client.cli\n\n\ndef f():\n    from amux.client import edit\n")
    assert imported("amux.adapters.registry", source, module_names()) == {
        "amux.client.cli", "amux.client.edit"}


def test_amux_has_no_import_cycle() -> None:
    modules = module_names()
    graph = {name: imported(name, source.read_text(), modules)
             for name, source in modules.items()}
    assert a_cycle(graph) is None
