"""Build the single-file client: an executable zipapp of `amux.client` (SPEC §1, §6).

The materializer copies this one file into an isolated run, where another user's
`python3` (3.9 or newer) runs it without access to the amux installation:
`python3 amux-client.pyz memory search TERM…` behaves like `amux memory …`.
It contains `amux/__init__.py`, the base it needs (`amux/encoding.py`, `amux/errors.py`,
`amux/faults.py`, `amux/typing_light.py`), `amux/client/*.py` and a `__main__.py`, nothing
else, each beside its bytecode for the Python that built it (`NAME.pyc`, unchecked-hash:
Python cannot cache what it compiles from a zip, so without them every start compiled
the client again, ~16 ms; a `python3` of another version finds the magic number differs
and compiles the source, as before).
"""

from __future__ import annotations

import hashlib
import py_compile
import shutil
import sys
import tempfile
import zipfile
from pathlib import Path

BASE = ("__init__.py", "encoding.py", "errors.py", "faults.py", "typing_light.py")
"""What the client imports from outside `amux/client/` (standard library only)."""

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
    with open(temp, "wb") as handle, tempfile.TemporaryDirectory() as scratch:
        handle.write(b"#!/usr/bin/env python3\n")
        main = Path(scratch, "__main__.py")
        main.write_text(_MAIN)
        with zipfile.ZipFile(handle, "w", compression=zipfile.ZIP_DEFLATED) as archive:
            for source, name in ((main, "__main__.py"),
                                 *((root / base, f"amux/{base}") for base in BASE),
                                 *((source, f"amux/client/{source.name}")
                                   for source in sorted(package.glob("*.py")))):
                archive.write(source, name)
                compiled = Path(scratch, "compiled.pyc")
                py_compile.compile(str(source), str(compiled), dfile=name, doraise=True,
                                   invalidation_mode=py_compile.PycInvalidationMode
                                   .UNCHECKED_HASH)
                archive.write(compiled, name + "c")
    temp.chmod(0o755)
    temp.replace(dest)
    return dest


def copy_client(dest: Path, cache_dir: Path) -> Path:
    """`build_client(dest)` from a copy built once per version of the client's sources
    in `cache_dir` (zipping them costs every isolated launch ~5 ms); mode 0755."""
    package = Path(__file__).resolve().parent
    sources = [*(package.parent / base for base in BASE), *sorted(package.glob("*.py"))]
    stamp = [sys.implementation.cache_tag, *((str(path), info.st_size, info.st_mtime_ns)
             for path, info in ((path, path.stat()) for path in sources))]
    key = hashlib.sha256(repr(stamp).encode()).hexdigest()[:16]
    cached = cache_dir / f"amux-client-{key}.pyz"
    if not cached.is_file():
        cache_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        for old in cache_dir.glob("amux-client-*.pyz"):
            old.unlink(missing_ok=True)
        build_client(cached)
    temp = dest.with_name(dest.name + ".tmp")
    shutil.copyfile(cached, temp)
    temp.chmod(0o755)
    temp.replace(dest)
    return dest
