"""Build the single-file client: an executable zipapp of `amux.client` (SPEC §1, §6).

The materializer copies this one file into an isolated run, where another user's
`python3` (3.9 or newer) runs it without access to the amux installation:
`python3 amux-client.pyz memory search TERM…` behaves like `amux memory …`.
It contains `amux/__init__.py`, `amux/client/*.py` and a `__main__.py`, nothing else.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

_MAIN = '''\
import sys

from amux.client.cli import main

if sys.argv[1:2] != ["memory"]:
    sys.stderr.write("usage: amux memory search|show|upsert|forget|export ...\\n")
    sys.exit(2)
sys.exit(main(sys.argv[2:]))
'''


def build_client(dest: Path) -> Path:
    """Write the zipapp to `dest` (mode 0755, `#!/usr/bin/env python3`) and return it."""
    package = Path(__file__).resolve().parent
    root = package.parent
    temp = dest.with_name(dest.name + ".tmp")
    with open(temp, "wb") as handle:
        handle.write(b"#!/usr/bin/env python3\n")
        with zipfile.ZipFile(handle, "w", compression=zipfile.ZIP_DEFLATED) as archive:
            archive.writestr("__main__.py", _MAIN)
            archive.write(root / "__init__.py", "amux/__init__.py")
            for source in sorted(package.glob("*.py")):
                archive.write(source, f"amux/client/{source.name}")
    temp.chmod(0o755)
    temp.replace(dest)
    return dest
