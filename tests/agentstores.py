"""Agents' memory stores laid out as each agent writes them, for `amux memory import` tests.

Where the agent's own code can be run, it places the store: Qwen Code's
`getAutoMemoryRoot`/`getUserAutoMemoryRoot` (chunk-OJSU46VD.js) and Gemini CLI's
`Storage.initialize()` (chunk-5FZXKDXH.js: it registers the project in
`~/.gemini/projects.json` and writes `tmp/<slug>/.project_root`) run under node with the
test's HOME. Claude Code and Codex are native binaries: their layouts follow what the
binaries say (docs/sync.md "Where each agent keeps its memory"): Claude's
`projects/<path with every non-alphanumeric character as '-'>/memory/` and its
`name`/`description`/`metadata.type` template; Codex's `memories/` files. Kilo Memory is
written by the real Kilo's own server (`enable_kilo_memory`, as its user switches it on).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.peers import npm_bin

NPM = Path(__file__).resolve().parents[1] / "fixtures" / "npm" / "node_modules"
QWEN_PATHS = NPM / "@qwen-code" / "qwen-code" / "chunks" / "chunk-OJSU46VD.js"
GEMINI_STORAGE = NPM / "@google" / "gemini-cli" / "bundle" / "chunk-5FZXKDXH.js"


def _node(script: str, home: Path, needs: Path) -> dict[str, str]:
    if shutil.which("node") is None or not needs.is_file():
        if os.environ.get("CI"):
            pytest.fail(f"node or {needs} missing (npm ci --prefix fixtures/npm)")
        pytest.skip(f"node or {needs.name} missing (npm ci --prefix fixtures/npm)")
    done = subprocess.run(["node", "--input-type=module", "-e", script], capture_output=True,
                          text=True, timeout=120, check=True,
                          env={"PATH": os.environ["PATH"], "HOME": str(home)})
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def git_repo(path: Path, remote: str | None) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    if remote is not None:
        subprocess.run(["git", "-C", str(path), "remote", "add", "origin", remote], check=True)
    return path


def topic(name: str, description: str, kind: str, body: str, nested: bool = True) -> str:
    """A note as the agents' templates write it: Claude Code puts the type under
    `metadata:`, Qwen Code at the top level."""
    kind_lines = f"metadata:\n  type: {kind}\n" if nested else f"type: {kind}\n"
    return f"---\nname: {name}\ndescription: {description}\n{kind_lines}---\n\n{body}"


def claude_store(home: Path, repo: Path, notes: dict[str, str]) -> Path:
    """`~/.claude/projects/<sanitized git root>/memory/` with an index line per note."""
    key = re.sub(r"[^a-zA-Z0-9]", "-", str(repo.resolve()))
    memory = home / ".claude" / "projects" / key / "memory"
    memory.mkdir(parents=True)
    index = []
    for name, text in notes.items():
        (memory / f"{name}.md").write_text(text)
        index.append(f"- [{name.replace('_', ' ')}]({name}.md) — {name}")
    (memory / "MEMORY.md").write_text("\n".join(index) + "\n")
    return memory


def qwen_store(home: Path, repo: Path, project: dict[str, str], user: dict[str, str],
               ) -> tuple[Path, Path]:
    """Qwen Code's project and user memories where its own code puts them: one file per
    memory in a folder per type, each folder's `MEMORY.md` indexing it."""
    paths = _node(
        f"const m = await import({json.dumps(str(QWEN_PATHS))});"
        f"console.log(JSON.stringify({{project: m.getAutoMemoryRoot({json.dumps(str(repo))}),"
        " user: m.getUserAutoMemoryRoot()}));", home, QWEN_PATHS)
    roots = Path(paths["project"]), Path(paths["user"])
    for root, notes in zip(roots, (project, user), strict=True):
        index = []
        for rel, text in notes.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text)
            index.append(f"- [{Path(rel).stem}]({rel}) — {Path(rel).stem}")
        (root / "MEMORY.md").write_text("\n".join(index) + "\n")
    (roots[0].parent / "meta.json").write_text('{"version": 1}\n')
    (roots[0].parent / "extract-cursor.json").write_text("{}\n")
    return roots


def gemini_store(home: Path, repo: Path, notes: dict[str, str], facts: list[str]) -> Path:
    """Gemini CLI's private project memory (`Storage.getProjectMemoryDir()`, placed by its
    own code), an `.inbox/` of auto-memory patches, and `~/.gemini/GEMINI.md` with the
    section the old `save_memory` tool appended to."""
    paths = _node(
        f"const m = await import({json.dumps(str(GEMINI_STORAGE))});"
        f"const s = new m.Storage({json.dumps(str(repo))}); await s.initialize();"
        "console.log(JSON.stringify({memory: s.getProjectMemoryDir()})); process.exit(0);",
        home, GEMINI_STORAGE)
    memory = Path(paths["memory"])
    memory.mkdir(parents=True)
    for name, text in notes.items():
        (memory / name).write_text(text)
    (memory / ".inbox").mkdir()
    (memory / ".inbox" / "1.patch").write_text("--- a\n+++ b\n")
    added = "".join(f"- {fact}\n" for fact in facts)
    (home / ".gemini" / "GEMINI.md").write_text(
        f"# My rules\n\nBe brief.\n\n## Gemini Added Memories\n{added}")
    return memory


def codex_store(home: Path) -> Path:
    """`~/.codex/memories/` as Codex's consolidation leaves it."""
    memories = home / ".codex" / "memories"
    (memories / "rollout_summaries").mkdir(parents=True)
    (memories / "MEMORY.md").write_text(
        "v1\n\n# Task Group: shop checkout\n\n- cwd: /home/u/shop\n- tests: `make test`\n")
    (memories / "memory_summary.md").write_text("## What's in Memory\n\n- shop checkout\n")
    (memories / "raw_memories.md").write_text("- thread 019a: fixed the cart total\n")
    (memories / "rollout_summaries" / "2026-12-01-cart.md").write_text("Fixed the cart.\n")
    return memories


def cline_bank(repo: Path) -> Path:
    """A repository's `memory-bank/` with Cline's core files."""
    bank = repo / "memory-bank"
    bank.mkdir(parents=True)
    for name, text in (("projectbrief.md", "# Project brief\n\nA shop.\n"),
                       ("activeContext.md", "# Active context\n\nCheckout rework.\n"),
                       ("progress.md", "# Progress\n\nCart done.\n")):
        (bank / name).write_text(text)
    return bank


def snapshot(root: Path) -> dict[str, tuple[bytes, int, int]]:
    """Every file and folder under `root` with its bytes, mode and modification time."""
    found: dict[str, tuple[bytes, int, int]] = {}
    for path in sorted(root.rglob("*")):
        info = path.lstat()
        data = path.read_bytes() if path.is_file() and not path.is_symlink() else b""
        found[str(path.relative_to(root))] = (data, info.st_mode, info.st_mtime_ns)
    return found


# -- Kilo Memory, as its user switches it on ---------------------------------------------


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def post(url: str, body: dict[str, Any] | None = None) -> Any:
    request = urllib.request.Request(url, method="POST", data=json.dumps(body or {}).encode(),
                                     headers={"content-type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as answer:
        return json.loads(answer.read())


def enable_kilo_memory(env: dict[str, str], work: Path, fact: str) -> dict[str, Any]:
    """What the user does to have Kilo Memory: `kilo serve` (on a free port, killed after),
    `POST /memory/enable` for the project, and one fact remembered. Its state file."""
    port = free_port()
    server = subprocess.Popen([str(npm_bin("kilo")), "serve", "--port", str(port)], env=env,
                              cwd=work, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            try:
                enabled = post(f"{url}/memory/enable?directory={work}")
                break
            except OSError:
                assert time.monotonic() < deadline, "kilo serve did not answer"
                time.sleep(0.2)
        post(f"{url}/memory/remember?directory={work}", {"text": fact})
    finally:
        os.killpg(server.pid, 9)
        server.wait(10)
    state = Path(enabled["root"]) / "state.json"
    assert json.loads(state.read_text())["enabled"] is True
    return {"state": state, "root": Path(enabled["root"])}
