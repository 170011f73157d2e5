"""The single-file client runs alone: `python3 -I` with nothing else on its path."""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

from amux.client.bundle import build_client, copy_client
from tests.hubproc import HubProcess

CLIENT = Path(__file__).resolve().parents[2] / "amux" / "client"


def test_client_sources_parse_as_python_3_9() -> None:
    for source in sorted(CLIENT.glob("*.py")):
        ast.parse(source.read_text(), str(source), feature_version=(3, 9))


def test_bundle_alone_talks_to_the_hub(memory_hub: HubProcess, tmp_path: Path) -> None:
    alone = tmp_path / "alone"
    alone.mkdir()
    bundle = build_client(tmp_path / "amux-client.pyz")
    copy = alone / "amux"
    shutil.copy(bundle, copy)
    env = {"PATH": os.environ.get("PATH", ""), "AMUX_HUB": f"unix:{memory_hub.socket_path}",
           "AMUX_TOKEN": memory_hub.owner_token}

    def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-I", "-S", str(copy), *args], input=stdin,
                              capture_output=True, text=True, env=env, cwd=alone, timeout=60)

    put = run("memory", "upsert", "a.md", "--expected-revision", "absent", stdin="alone\n")
    assert put.returncode == 0, put.stderr
    shown = run("memory", "show", "a.md")
    assert json.loads(shown.stdout)["content"] == "alone\n"
    assert run("memory", "search", "alone").returncode == 0
    assert run("nope").returncode == 2
    (alone / "notes").mkdir()
    (alone / "notes" / "b.md").write_text("from a folder\n")
    imported = run("memory", "import", "notes", "--apply")  # the typed records come along
    assert json.loads(imported.stdout)["summary"] == {"created": 1, "skipped": 0}, imported.stderr
    assert run("memory", "export", "--dir", "out").returncode == 0
    assert (alone / "out" / "b.md").read_text() == "from a folder\n"
    shutil.rmtree(alone / "notes")
    shutil.rmtree(alone / "out")
    assert os.access(bundle, os.X_OK)
    assert sorted(os.listdir(alone)) == ["amux"]


def test_isolated_runs_copy_a_client_built_once(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "amux-client-0123456789abcdef.pyz").write_bytes(b"an older client")
    first = copy_client(tmp_path / "one", cache)
    [built] = cache.glob("amux-client-*.pyz")  # the older one is gone
    stamp = built.stat().st_mtime_ns
    second = copy_client(tmp_path / "two", cache)
    assert built.stat().st_mtime_ns == stamp  # reused, not rebuilt
    fresh = build_client(tmp_path / "fresh")
    assert first.read_bytes() == second.read_bytes() == built.read_bytes()
    assert len(first.read_bytes()) == len(fresh.read_bytes())
    assert os.stat(second).st_mode & 0o777 == 0o755
    done = subprocess.run([sys.executable, "-I", str(second), "memory", "--help"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "search" in done.stdout


def test_the_bundle_carries_its_bytecode_and_runs_without_it(tmp_path: Path) -> None:
    """Python caches nothing it compiles from a zip: the bundle carries each module's
    bytecode (unchecked-hash .pyc beside its .py), used by the Python that built it; a
    python3 of another version (another magic number) compiles the sources instead."""
    bundle = build_client(tmp_path / "amux-client.pyz")
    with zipfile.ZipFile(bundle) as archive:
        names = set(archive.namelist())
    sources = {name for name in names if name.endswith(".py")}
    assert "amux/client/cli.py" in sources and names == sources | {
        name + "c" for name in sources}
    probe = ("import sys; sys.path.insert(0, sys.argv[1]); import amux.client.cli as cli; "
             "print(cli.__file__)")
    loaded = subprocess.run([sys.executable, "-I", "-c", probe, str(bundle)],
                            capture_output=True, text=True, timeout=60)
    assert loaded.stdout.strip().endswith("amux/client/cli.pyc"), loaded.stderr
    other = tmp_path / "other-python.pyz"  # as another Python version would find it
    with zipfile.ZipFile(bundle) as source, zipfile.ZipFile(other, "w") as target:
        for name in source.namelist():
            data = source.read(name)
            target.writestr(name, b"\0\0\r\n" + data[4:] if name.endswith(".pyc") else data)
    loaded = subprocess.run([sys.executable, "-I", "-c", probe, str(other)],
                            capture_output=True, text=True, timeout=60)
    assert loaded.stdout.strip().endswith("amux/client/cli.py"), loaded.stderr
    done = subprocess.run([sys.executable, "-I", str(other), "memory", "--help"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "search" in done.stdout, done.stderr
