"""The one error table and `encode` of the wire contract, and the client's stdlib-only rule."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from amux import errors
from amux.encoding import encode, encoded_size
from amux.errors import ERROR_TABLE, from_wire

ROOT = Path(__file__).resolve().parents[1]


def test_an_error_from_the_wire_is_its_codes_class() -> None:
    """What the client receives is raised by type, as the store raised it; a code this side
    does not know keeps its code and exits 1."""
    for code, (status, exit_code) in ERROR_TABLE.items():
        received = from_wire(code, "x")
        assert (received.code, received.http_status, received.exit_code) == (
            code, status, exit_code)
        assert type(received).code == code  # its class, not a stand-in
    conflict = from_wire("revision_conflict", "x", {"current_revision": "r"})
    assert isinstance(conflict, errors.RevisionConflict)
    assert conflict.to_wire() == {
        "error": {"code": "revision_conflict", "message": "x", "current_revision": "r"}}
    newer = from_wire("a_code_from_a_newer_hub", "x", {"more": 1})
    assert (newer.code, newer.exit_code, newer.to_wire()["error"]["more"]) == (
        "a_code_from_a_newer_hub", 1, 1)
    assert errors.AmuxError.code == "internal"  # the stand-in changed no class


def test_the_tree_drawn_in_the_docstring_is_the_tree() -> None:
    """`amux/errors.py` draws every class of the one tree, with its code."""
    import amux.adapters.base
    import amux.client.args
    import amux.memory.fs  # noqa: F401 - FileInTheWay

    def every(base: type[errors.AmuxError]) -> list[type[errors.AmuxError]]:
        return [cls for sub in base.__subclasses__() for cls in (sub, *every(sub))]

    drawn = errors.__doc__ or ""
    for cls in every(errors.AmuxError):
        assert f"── {cls.__name__}" in drawn, cls.__name__
        if cls.__module__ == "amux.errors" and cls.code != cls.__mro__[1].code:
            assert f"{cls.__name__}" in drawn and cls.code in drawn


def test_encode_is_compact_utf8() -> None:
    value = {"path": "notes/é.md", "hits": [1, 2]}
    assert encode(value) == '{"path":"notes/é.md","hits":[1,2]}'.encode()
    assert encoded_size(value) == len(encode(value))


def test_client_imports_only_the_standard_library() -> None:
    """`python3 -I -S`: no site-packages at all; the client must import only stdlib and amux."""
    code = (
        "import sys, pkgutil, importlib; sys.path.insert(0, sys.argv[1]); import amux.client; "
        "[importlib.import_module('amux.client.' + m.name) "
        "for m in pkgutil.iter_modules(amux.client.__path__)]; "
        "names = {m.split('.')[0] for m in sys.modules}; "
        "print(sorted(n for n in names if n not in sys.stdlib_module_names "
        "and n not in ('amux', '__main__')))"
    )
    done = subprocess.run([sys.executable, "-I", "-S", "-c", code, str(ROOT)],
                          capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_the_documented_error_table_is_the_one_in_the_code() -> None:
    """docs/wire.md is what integrators read: every code with its HTTP status and exit
    status, exactly as `ERROR_TABLE` answers."""
    import re
    from pathlib import Path

    from amux.errors import ERROR_TABLE

    text = (Path(__file__).resolve().parents[1] / "docs" / "wire.md").read_text()
    table = text.split("<!-- error-table -->", 1)[1].split("\n\n", 1)[0]
    documented = {code: (None if http == "—" else int(http), int(exit_))
                  for code, http, exit_ in re.findall(
                      r"^\| `(\w+)` \| (\d+|—) \| (\d+) \|", table, re.M)}
    assert documented == ERROR_TABLE
