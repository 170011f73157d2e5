"""What the e2e tests of the real agents share: `amux run` of a real agent, bounded and in a
process group of its own; a user's shell for the installed `amux`; the sessions it leaves;
the four-session memory story every agent tells (save, find, correct, forget, then resume
the first) with what the model and the store must show after it; the user's own MCP
server; and how a recorded request of one agent's API is read."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from tests.hubproc import HubProcess
from tests.mockmodel import MockModel, Recorded, Step, Text, ToolCall, default_is_side, mcp
from tests.mockmodel.agents import base_env
from tests.peers import agent_bins

USER_MCP = Path(__file__).with_name("user_mcp.py")
USER_RULE = "USER-RULE-LINE: answer like a pirate."
PROJECT_RULE = "PROJECT-RULE-LINE: this repository uses tabs."
"""A user's own MCP server (stdio), for the agents to load beside amux's."""

TIMEOUT = 180
"""Seconds one `amux run` of a real agent may take before its process group is killed."""

PATH = "preferences/editor.md"
FIRST, SECOND = "Indent with tabs.\n", "Indent with four spaces.\n"


def revision(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


PROMPTS = ["Remember: I indent with tabs.", "How do I indent?", "Correction: four spaces.",
           "Forget my indentation preference."]
"""The user's side of the four sessions of every agent's story."""


def mcp_story(first_delay: float = 0.0,
              call: Callable[[str, dict[str, Any]], ToolCall] = mcp) -> list[list[Step]]:
    """The model's side of the story over the MCP tools: save, search, read and correct,
    forget, then the resumed first session. `call` names a tool as the agent's model sees
    it (default: the `amux` server's tool, each API's own form)."""
    return [
        [replace(call("memory_upsert", {"path": PATH, "content": FIRST,
                                        "expected_revision": "absent"}), delay=first_delay),
         Text("Saved.")],
        [call("memory_search", {"query": "tabs"}), Text("You indent with tabs.")],
        [call("memory_get", {"path": PATH}),
         call("memory_upsert", {"path": PATH, "content": SECOND,
                                "expected_revision": revision(FIRST)}), Text("Corrected.")],
        [call("memory_forget", {"path": PATH, "expected_revision": revision(SECOND)}),
         Text("Forgotten.")],
        [Text("Resumed.")],
    ]


def mcp_results(model: MockModel) -> dict[str, str]:
    """What the MCP tools returned in the four sessions, by step of the story."""
    upserts = model.tool_results("memory_upsert")
    return {"save": upserts[0].text, "correct": upserts[1].text,
            "search": only(model, "memory_search"), "forget": only(model, "memory_forget")}


def bounded(argv: list[str], env: dict[str, str], cwd: Path, timeout: float = TIMEOUT,
            ) -> subprocess.CompletedProcess[str]:
    """Run `argv` to its end in a process group of its own, stdin closed; after `timeout`
    seconds the whole group (the launcher, the agent, what it started: a relaunched node,
    its MCP servers) is killed and the test fails."""
    cwd.mkdir(parents=True, exist_ok=True)
    with subprocess.Popen(argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          start_new_session=True) as process:
        try:
            out, err = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            out, err = process.communicate()
            raise AssertionError(f"timed out after {timeout} s: {argv}\n{err[-3000:]}") from None
    return subprocess.CompletedProcess(argv, process.returncode, out, err)


def amux_run(hub: HubProcess, env: dict[str, str], cwd: Path, *args: str,
             ) -> subprocess.CompletedProcess[str]:
    """`amux run ARGS` with `hub`'s home, bounded; it must succeed."""
    done = bounded([sys.executable, "-m", "amux", "run", *args],
                   {**env, "AMUX_HOME": str(hub.home)}, cwd)
    assert done.returncode == 0, f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


class UserShell:
    """A user's shell: a fresh home, the installed `amux` (this interpreter's) and the pinned
    agents on PATH, no AMUX_*, XDG_* or model credential variable (`extra`: what the
    sandbox needs, not amux). `amux` starts its local Hub there on demand; `close` stops it."""

    def __init__(self, root: Path, **extra: str) -> None:
        self.work = root / "work"
        self.work.mkdir(parents=True, exist_ok=True)
        env = base_env(root)  # PATH, locale and HOME=root/home: nothing configured
        env["PATH"] = os.pathsep.join([os.path.dirname(sys.executable),
                                       *map(str, agent_bins()), env["PATH"]])
        self.env = {**env, "NO_PROXY": "127.0.0.1", "no_proxy": "127.0.0.1", **extra}

    def amux(self, *args: str, timeout: float = TIMEOUT) -> subprocess.CompletedProcess[str]:
        """`amux ARGS` in the work directory, stdin /dev/null, bounded (`bounded`)."""
        return bounded(["amux", *args], self.env, self.work, timeout)

    def close(self) -> None:
        self.amux("hub", "stop", timeout=60)


def sessions(where: HubProcess | Path) -> list[dict[str, Any]]:
    """Every amux session's state under a Hub's home (or that home), in start order (ids
    started within one second sort by their random part, not by time)."""
    home = where if isinstance(where, Path) else where.home
    found = [json.loads((d / "state.json").read_text()) for d in (home / "sessions").iterdir()]
    return sorted(found, key=lambda state: state["created_at"])


def stored(hub: HubProcess) -> dict[str, Any]:
    return dict(hub.call("/v1/memory/get", {"path": PATH})[1])


def check_store_story(hub: HubProcess, model: MockModel, results: dict[str, str]) -> None:
    """After the four sessions: what each tool returned, and the store's final state."""
    saved = json.loads(json_line(results["save"]))
    assert saved["revision"] == revision(FIRST) and saved["created"] is True
    assert PATH in results["search"] and "tabs" in results["search"]
    assert json.loads(json_line(results["correct"]))["revision"] == revision(SECOND)
    assert json.loads(json_line(results["forget"])) == {"path": PATH, "deleted": True}
    assert stored(hub)["exists"] is False


def only(model: MockModel, tool: str) -> str:
    found = model.tool_results(tool)
    assert found, f"no result for {tool}"
    assert not found[-1].is_error, found[-1].text
    return found[-1].text


def json_line(text: str) -> str:
    """The JSON line a tool result carries (Codex and Pi add their own framing)."""
    return next(line for line in text.splitlines() if line.startswith("{"))


# -- one agent's requests


def opencode_is_side(request: Recorded) -> bool:
    """OpenCode's title request (Chat Completions, no tools) beside the mock's defaults."""
    return default_is_side(request) or (request.api == "chat" and not request.tools)


def chat_tools(request: Recorded) -> dict[str, Any]:
    """A Chat Completions request's tools (`function`s) by name."""
    return {str(tool["function"]["name"]): tool["function"] for tool in request.tools}


def opencode_system_text(request: Recorded) -> str:
    """OpenCode's one system message (Chat Completions `messages[0]`)."""
    first = request.body["messages"][0]
    assert first["role"] == "system"
    return str(first["content"])


def opencode_family_user(root: Path, model: MockModel, agent: str, schema: str,
                         agent_env: Callable[..., dict[str, str]]) -> tuple[dict[str, str], Path]:
    """The user of OpenCode or its fork Kilo (`agent`: its config's name): an instruction file
    in their own config content (`agent_env`), a global `<agent>.json` with an MCP server of
    theirs and `permission: {"*": "ask"}`, and a project with an `AGENTS.md`; nothing of
    amux in either. Their environment and the project's directory."""
    config = root / "home" / ".config" / agent
    config.mkdir(parents=True)
    rules = root / "user-rules.md"
    rules.write_text(USER_RULE + "\n")
    (config / f"{agent}.json").write_text(json.dumps({
        "$schema": schema, "permission": {"*": "ask"},
        "mcp": {"mine": {"type": "local", "command": [sys.executable, str(USER_MCP)]}}}))
    work = root / "work"
    work.mkdir()
    (work / "AGENTS.md").write_text(PROJECT_RULE + "\n")
    return agent_env(root, model, {"instructions": [str(rules)]}), work


def check_opencode_family_story(hub: HubProcess, model: MockModel, main: list[Recorded],
                                first: dict[str, Any], second: dict[str, Any],
                                resumed: subprocess.CompletedProcess[str], *, greeting: str,
                                instructions: str, rules: tuple[str, str], saved: str,
                                ) -> Recorded:
    """What OpenCode and its fork Kilo show after save, search and resume launches (`main`:
    their requests, the resume's last): the agent's prompt (`greeting`), then the user's
    project and user rules (`rules`), then the protocol from the session's `instructions`
    file; the five tools with their schemas beside the user's server; the fact `saved` at
    PATH and found; each session's own id learnt and the resume continuing the first with
    its system message. The resume's request."""
    from amux.client.tools import TOOLS
    from amux.protocol.render import render

    opening = main[0]
    system = opencode_system_text(opening)
    protocol = render("mcp")
    assert system.startswith(greeting)
    assert system.index(rules[0]) < system.index(rules[1]) < system.index(protocol)
    protocol_file = hub.home / "sessions" / first["id"] / instructions
    assert f"Instructions from: {protocol_file}\n{protocol}" in system
    sent = chat_tools(opening)
    for tool in TOOLS:
        assert sent[f"amux_{tool['name']}"]["parameters"]["properties"] == \
            tool["inputSchema"]["properties"]
    assert {"mine_user_lookup", "mine_user_ping", "bash"} <= set(sent)
    [upserted] = model.tool_results("amux_memory_upsert")
    assert not upserted.is_error and json.loads(upserted.text)["created"] is True, upserted.text
    status, stored = hub.call("/v1/memory/get", {"path": PATH})
    assert status == 200 and stored["content"] == saved
    [found] = model.tool_results("amux_memory_search")
    assert not found.is_error and PATH in found.text
    assert first["agent_session"].startswith("ses_") and second["agent_session"]
    assert first["agent_session"] != second["agent_session"]
    assert opening.headers["x-session-id"] == first["agent_session"]
    again = main[-1]
    assert again.headers["x-session-id"] == first["agent_session"]
    assert again.body["messages"][0] == opening.body["messages"][0]
    assert "Remember: I indent with tabs." in json.dumps(again.body["messages"])
    events = [json.loads(line) for line in resumed.stdout.splitlines() if line.startswith("{")]
    assert {event["sessionID"] for event in events} == {first["agent_session"]}
    return again


def gemini_declared(request: Any) -> dict[str, Any]:
    """The request's function declarations by name."""
    return {d["name"]: d for tool in request.tools for d in tool.get("functionDeclarations", [])}
