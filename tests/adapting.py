"""Adapter plans without a disk or a process: a fake `Probe`, each agent's user giving their
own instructions, and the plan of one launch with or without memory and an endpoint (what
the adapter, endpoint and doctor tests all plan from)."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Mapping, Sequence

import tomlkit

from amux.adapters import ADAPTERS
from amux.adapters.base import AgentRequest, EndpointRequest, LaunchPlan, Memory
from amux.envpatch import EnvPatch
from amux.launcher.probe import SystemProbe
from amux.protocol.render import render


class FakeProbe(SystemProbe):
    """The real probe's surroundings (env, cwd, executable, warnings) with files from a
    dict (a directory is any prefix of a file's path; a file's signature is its text's
    hash, unless `stats` says otherwise) and commands answered from a dict of argv tuples
    (recorded in `ran` with their stdin, and their environment changes in `ran_env`);
    the cache is a dict, shared between probes that are given the same one: nothing is
    read from disk or run."""

    def __init__(self, files: dict[str, str], env: Mapping[str, str] | None = None,
                 cwd: str = "/work/project",
                 commands: dict[tuple[str, ...], tuple[int, str, str]] | None = None,
                 executable: str | None = None, cache: dict[str, str] | None = None,
                 stats: dict[str, str | None] | None = None) -> None:
        super().__init__(env or {"HOME": "/home/u"}, cwd, executable=executable)
        self.files = files
        self.commands = commands or {}
        self.cache = {} if cache is None else cache
        self.stats = stats or {}
        self.read: list[str] = []
        self.ran: list[tuple[tuple[str, ...], str]] = []
        self.ran_env: list[EnvPatch | None] = []

    def read_text(self, path: str) -> str | None:
        self.read.append(path)
        return self.files.get(path)

    def realpath(self, path: str) -> str:
        return os.path.normpath(os.path.join(self.cwd, path))

    def list_dir(self, path: str) -> list[str] | None:
        prefix = path.rstrip("/") + "/"
        return sorted({name[len(prefix):].split("/")[0] for name in self.files
                       if name.startswith(prefix)})

    def stat_signature(self, path: str) -> str | None:
        if path in self.stats:
            return self.stats[path]
        if path in self.files:
            return "file:" + hashlib.sha256(self.files[path].encode()).hexdigest()[:16]
        if any(name.startswith(path.rstrip("/") + "/") for name in self.files):
            return "dir"
        return "absent"

    def recall(self, key: str) -> str | None:
        return self.cache.get(key)

    def remember(self, key: str, value: str) -> None:
        self.cache[key] = value

    def run(self, argv: Sequence[str], *, stdin: str = "", timeout: float,
            until: Callable[[str], bool] | None = None,
            env: EnvPatch | None = None,
            exit_grace: float | None = None) -> tuple[int, str, str] | None:
        self.ran.append((tuple(argv), stdin))
        self.ran_env.append(env)
        return self.commands.get(tuple(argv))


USER_TEXT = 'Always answer in "British" English.\nNever use tabs.'
USER_ARGS = {  # how each agent's user passes their own instructions
    "claude": ["-p", "hello", "--append-system-prompt", USER_TEXT],
    "codex": ["-c", f"developer_instructions={tomlkit.item(USER_TEXT).as_string()}",
              "exec", "hello"],
    "pi": ["-p", "--append-system-prompt", USER_TEXT, "hello"],
    "opencode": ["run", "hello"],  # theirs are files OpenCode reads itself
    "kilo": ["run", "hello"],  # theirs are files Kilo reads itself
    "gemini": ["-p", "hello"],  # its user writes them in ~/.gemini/GEMINI.md (USER_FILES)
    "copilot": ["-p", "hello"],  # theirs are files Copilot reads itself
    "qwen": ["-p", "hello", "--append-system-prompt", USER_TEXT],
    "cline": ["hello"],  # theirs are rules Cline reads itself
}
USER_FILES: dict[str, dict[str, str]] = {  # an agent whose user writes them in a file
    "gemini": {"/home/u/.gemini/GEMINI.md": USER_TEXT},
}
SESSION_FILES = "/home/u/.local/share/amux/sessions/s"
"""The session's directory of files in every plan here."""


def memory(channel: str) -> Memory:
    return Memory(protocol=render(channel),  # type: ignore[arg-type]
                  mcp_command=("/opt/amux/bin/amux", "memory", "mcp"),
                  env={"AMUX_MEMORY_CONFIG": "/home/u/.local/share/amux/run/agents/s/memory.json"},
                  bin_dir="/home/u/.local/share/amux/run/agents/s/bin")


def plan(name: str, *, with_memory: bool = True, resume: bool = False,
         frozen: str | None = None, args: list[str] | None = None,
         agent_session: str | None = "agent-session-1",
         version: str | None = None) -> LaunchPlan:
    """`name`'s plan of a launch with its user's own instructions (USER_ARGS, USER_FILES)."""
    adapter = ADAPTERS[name]
    given = tuple(USER_ARGS[name] if args is None else args)
    return adapter.plan(AgentRequest(
        executable=f"/usr/bin/{name}", args=given,
        memory=memory(adapter.channel) if with_memory else None,
        # As the launcher does: the agent's own instructions are read for a new session only.
        user_instructions=() if resume else adapter.user_instructions(
            given, FakeProbe(USER_FILES.get(name, {}))),
        frozen_instructions=frozen, agent_session=agent_session, resume=resume,
        files_dir=SESSION_FILES,
        user_settings=adapter.user_settings(given, FakeProbe({})),  # every launch
        version=version))


URL = "http://127.0.0.1:11434/v1"
"""The endpoint of `amux run --endpoint` in the plans (an Ollama's, OpenAI-compatible)."""


def endpoint_plan(name: str, endpoint: EndpointRequest | None, *, with_memory: bool = True,
                  files_dir: str = SESSION_FILES,
                  args: list[str] | None = None) -> LaunchPlan:
    """`name`'s plan of a launch pointed at `endpoint` (None: at its usual one)."""
    adapter = ADAPTERS[name]
    return adapter.plan(AgentRequest(
        executable=f"/usr/bin/{name}", args=tuple(USER_ARGS[name] if args is None else args),
        memory=memory(adapter.channel) if with_memory else None,
        agent_session="agent-session-1", files_dir=files_dir, endpoint=endpoint))
