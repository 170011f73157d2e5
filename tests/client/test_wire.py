"""The client's exit-code table is the store's error table (one contract, two copies)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from amux.client.wire import EXIT_CODES, ClientError
from amux.memory.errors import ERROR_TABLE

ROOT = Path(__file__).resolve().parents[2]


def test_exit_codes_match_the_error_table() -> None:
    assert {code: exit_code for code, (_status, exit_code) in ERROR_TABLE.items()} == EXIT_CODES
    assert ClientError("revision_conflict", "x", {"current_revision": "r"}).to_wire() == {
        "error": {"code": "revision_conflict", "message": "x", "current_revision": "r"}
    }


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
