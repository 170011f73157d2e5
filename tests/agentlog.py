"""What the scripted agents of the launcher and isolation tests leave behind."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from tests.wait import wait_until

KEEPS_SESSION = '''
import os, sys
def kept(path):  # the agent's own session, as the real one keeps it (not when failing at once)
    if os.environ.get("FAKE_AGENT_EXIT", "0") == "0" and not os.environ.get("FAKE_AGENT_IDLE"):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        open(path, "a").close()
name, args = os.path.basename(sys.argv[0]), sys.argv[1:]
home = os.environ.get("HOME", "/")
if name == "claude" and "--session-id" in args:
    kept(os.path.join(os.environ.get("CLAUDE_CONFIG_DIR") or os.path.join(home, ".claude"),
                      "projects", "fake", args[args.index("--session-id") + 1] + ".jsonl"))
if name == "gemini" and "--session-id" in args:
    kept(os.path.join(os.environ.get("GEMINI_CLI_HOME", home), ".gemini", "tmp", "fake",
                      "chats", "session-t-" + args[args.index("--session-id") + 1][:8] + ".jsonl"))
if name in ("pi", "gemini") and "--session" in args:
    kept(args[args.index("--session") + 1])
'''
"""Source for a scripted agent (its imports done): it keeps its own session where the real
agent would (Claude's projects, Gemini's chats, Pi's session file), unless it fails at once
(`FAKE_AGENT_EXIT`) or ends having done nothing (`FAKE_AGENT_IDLE`: Pi with no prompt), as
the launcher checks before offering a resume."""


def wait_for_pid(log: Path, timeout: float = 30) -> int:
    """The pid a scripted agent writes to `<log>.pid` once it is running and waiting."""
    pid_file = Path(str(log) + ".pid")
    return int(wait_until(lambda: pid_file.exists() and pid_file.read_text(), timeout,
                          "the agent to start and write its pid"))



def find(*roots: Path) -> list[str]:
    """`find` listing every path under `roots` (links not followed): kind, mode, uid, path."""
    return ["find", *map(str, roots), "-mindepth", "1", "-printf", "%y %m %U %p\\n"]


def listed(*roots: Path) -> str:
    """`find`'s listing of those of `roots` that exist. A file that vanishes while find
    walks (the Hub's history writes and renames its own when it likes) is not an error."""
    done = subprocess.run(find(*(root for root in roots if root.exists())),
                          capture_output=True, text=True, check=False, timeout=60)
    if done.returncode and not all(line.endswith("No such file or directory")
                                   for line in done.stderr.splitlines()):
        raise AssertionError(f"find failed: {done.stderr}")
    return done.stdout


NOT_THE_LAUNCHS = ("cache", "history")
"""What AMUX_HOME holds that a launch does not write: the launcher's caches (the agent's
version, the hooks' answers, an isolated run's client: a dry run neither reads nor writes
them) and the Hub's memory history (the Hub's own, written when it likes)."""


def tree(listing: str, home: Path) -> dict[str, tuple[str, str, int]]:
    """`find`'s listing as {path: (kind: d, f or l, mode, uid)}, without `NOT_THE_LAUNCHS`."""
    others = tuple(f"{home}/{name}" for name in NOT_THE_LAUNCHS)
    found = {}
    for line in listing.splitlines():
        kind, mode, uid, path = line.split(" ", 3)
        if path not in others and not path.startswith(tuple(f"{o}/" for o in others)):
            found[path] = (kind, mode, int(uid))
    return found


KINDS = {"dir": "d", "mirror": "d", "file": "f", "link": "l", "copy": "f"}


def check_writes(dry: dict[str, Any], session: str, before: dict[str, tuple[str, str, int]],
                 during: dict[str, tuple[str, str, int]], owners: dict[str, int]) -> None:
    """Both ways: every path created between `before` and `during` (a launch's agent
    running) is in the dry run's `writes` (a mirror's own links: under its entry), and
    each of those is there, of its kind, mode and owner (`owners`: uid by name)."""
    writes = {entry["path"].replace(dry["session"], session): entry
              for entry in dry["writes"]}
    assert [entry["path"] for entry in dry["writes"]] == dry["files"]
    mirrors = tuple(path + "/" for path, entry in writes.items()
                    if entry.get("kind") == "mirror")
    created = sorted(path for path in during.keys() - before.keys()
                     if path not in writes and not path.startswith(mirrors))
    assert created == [], f"created, not in the dry run: {created}"
    missing = sorted(path for path in writes if path not in during)
    assert missing == [], f"in the dry run, not created: {missing}"
    for path, entry in writes.items():
        mode = entry["mode"] and entry["mode"].removeprefix("0")
        assert during[path] == (KINDS[entry["kind"]], mode or "777",
                                owners[entry["owner"]]), (path, during[path], entry)
