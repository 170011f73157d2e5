"""The one error table and `encode` of the wire contract, and the client's stdlib-only rule."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from amux.client.wire import ERROR_TABLE, ClientError, encode, encoded_size

ROOT = Path(__file__).resolve().parents[2]


def test_client_errors_exit_with_their_codes_row() -> None:
    for code, (_status, exit_code) in ERROR_TABLE.items():
        assert ClientError(code, "x").exit_code == exit_code
    assert ClientError("a_code_from_a_newer_hub", "x").exit_code == 1
    assert ClientError("revision_conflict", "x", {"current_revision": "r"}).to_wire() == {
        "error": {"code": "revision_conflict", "message": "x", "current_revision": "r"}
    }


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

    from amux.client.wire import ERROR_TABLE

    text = (Path(__file__).resolve().parents[2] / "docs" / "wire.md").read_text()
    table = text.split("<!-- error-table -->", 1)[1].split("\n\n", 1)[0]
    documented = {code: (None if http == "—" else int(http), int(exit_))
                  for code, http, exit_ in re.findall(
                      r"^\| `(\w+)` \| (\d+|—) \| (\d+) \|", table, re.M)}
    assert documented == ERROR_TABLE
