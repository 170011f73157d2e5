"""What the scripted agents of the launcher and isolation tests leave behind."""

from __future__ import annotations

from pathlib import Path

from tests.wait import wait_until

KEEPS_SESSION = '''
import os, sys
def kept(path):  # the agent's own session, as the real one keeps it (not when failing at once)
    if os.environ.get("FAKE_AGENT_EXIT", "0") == "0":
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
(`FAKE_AGENT_EXIT`), as the launcher checks before offering a resume."""


def wait_for_pid(log: Path, timeout: float = 30) -> int:
    """The pid a scripted agent writes to `<log>.pid` once it is running and waiting."""
    pid_file = Path(str(log) + ".pid")
    return int(wait_until(lambda: pid_file.exists() and pid_file.read_text(), timeout,
                          "the agent to start and write its pid"))
