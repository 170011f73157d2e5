"""What one evaluated session did, gathered from four independent records.

1. **The conversation** as the recording proxy saw it (`amux.eval.proxy`): every tool call
   the model made, with the result the agent sent back, read from the history each model
   request carries. Memory calls are the `amux` MCP tools, named as each adapter says its
   agent names them (`mcp_tool_prefix`), and `amux memory …` commands in a shell tool (Pi,
   or any agent that shells out). This is the model's own view, the same for every
   agent, and it includes calls the agent refused to carry out.
2. **The store** before and after, through the Hub API: what the memory calls did.
3. **Files** under the run root (work directory and agent home) before and after: writes
   that landed outside memory. Writes the model *attempted* (a write/edit tool call, a
   patch, a shell redirection) count too, since an agent may refuse them.
4. **The final answer** the agent printed.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from amux.adapters import ADAPTERS
from amux.adapters.base import MEMORY_TOOLS
from amux.eval import model_apis
from amux.eval.proxy import Exchange
from amux.eval.workspace import FileState

Place = Literal["agents_md", "native_memory", "repository", "local_note"]
INSTRUCTION_FILES = frozenset(name.lower() for adapter in ADAPTERS.values()
                              for name in adapter.instruction_files)
"""Every agent's project instruction files (lower case), from the adapters."""
PLACES: dict[Place, str] = {
    "agents_md": "an instruction file", "native_memory": "the agent's native memory",
    "repository": "a repository file", "local_note": "a local note",
}
NATIVE_SEGMENTS = frozenset({"memory", "memories", "memories_v2"})
NOTE_SUFFIXES = frozenset({".md", ".markdown", ".txt", ".org", ".rst", ".note", ".notes", ""})
WRITE_TOOLS = re.compile(r"^(?:write|edit|multiedit|notebookedit|create_file|str_replace"
                         r"(?:_editor|_based_edit_tool)?|apply_patch|write_file|edit_file"
                         r"|replace)$", re.IGNORECASE)
SHELL_TOOLS = re.compile(r"^(?:bash|shell|local_shell|exec_command|shell_command|run_command"
                         r"|run_shell_command|terminal)$", re.IGNORECASE)
_PREFIXES = sorted({adapter.mcp_tool_prefix for adapter in ADAPTERS.values()
                    if adapter.mcp_tool_prefix}, key=len, reverse=True)
_MCP = re.compile("^(?:" + "|".join(map(re.escape, _PREFIXES)) + ")?("
                  + "|".join(MEMORY_TOOLS) + ")$")
_CLI = re.compile(r"\bamux\s+memory\s+(search|show|get|upsert|forget|list|export|edit)\b"
                  r"([^\n;&|]*)")
_CLI_OPS = {"search": "search", "show": "get", "get": "get", "upsert": "upsert",
            "forget": "forget", "list": "list", "export": "list", "edit": "upsert"}
_ERROR_JSON = re.compile(r'"error"\s*:\s*\{\s*"code"')
_HEREDOC = re.compile(r"<<-?\s*['\"]?(\w+)['\"]?[^\n]*\n.*?\n\s*\1\b", re.DOTALL)
_REDIRECT = re.compile(r"(?:>>?|\btee\b(?:\s+-a)?|\btouch\b)\s*['\"]?([^\s'\";|&<>)]+)")
_PATCH = re.compile(r"^\*\*\* (?:Add|Update|Delete) File: (.+)$", re.MULTILINE)
_PATH_KEYS = ("file_path", "filePath", "path", "notebook_path", "filename", "target_file",
              "file")


@dataclass
class MemoryCall:
    op: str
    """search, get, upsert, forget, list or continue."""
    via: Literal["mcp", "cli"]
    path: str | None = None
    query: str | None = None
    ok: bool | None = None
    """Whether the tool result reported success; None when no result was seen."""

    @property
    def writes(self) -> bool:
        return self.op in ("upsert", "forget")

    @property
    def reads(self) -> bool:
        return self.op in ("search", "get", "list", "continue")


@dataclass
class Write:
    """A write outside amux memory: a file that changed, or a call that tried to."""

    place: Place
    path: str
    text: str
    seen: Literal["file", "call"]


@dataclass
class Turn:
    """Everything one session left behind."""

    index: int
    prompt: str
    answer: str = ""
    exit_code: int | None = None
    timed_out: bool = False
    seconds: float = 0.0
    stderr: str = ""
    warnings: list[str] = field(default_factory=list)
    memory_calls: list[MemoryCall] = field(default_factory=list)
    other_calls: list[str] = field(default_factory=list)
    """Other tool calls, as `name(short arguments)`, for the report."""
    writes: list[Write] = field(default_factory=list)
    store_before: dict[str, str] = field(default_factory=dict)
    store_after: dict[str, str] = field(default_factory=dict)
    model_requests: int = 0
    answered_requests: int = 0
    """Model requests the endpoint answered (status 200)."""
    failed_requests: list[str] = field(default_factory=list)
    prompt_tokens: list[int | None] = field(default_factory=list)
    """What the endpoint counted for each model request of the session, in order."""
    content_chars: list[int] = field(default_factory=list)
    call_texts: list[str] = field(default_factory=list)
    """The arguments of every call but memory calls, as JSON (for the injected file name)."""

    @property
    def store_changed(self) -> bool:
        return self.store_before != self.store_after

    def to_json(self) -> dict[str, Any]:
        return {
            "turn": self.index + 1, "prompt": self.prompt, "answer": self.answer,
            "exit_code": self.exit_code, "timed_out": self.timed_out,
            "seconds": round(self.seconds, 2), "warnings": self.warnings,
            "memory_calls": [{"op": c.op, "via": c.via, "path": c.path, "query": c.query,
                              "ok": c.ok} for c in self.memory_calls],
            "other_calls": self.other_calls,
            "writes_outside_memory": [{"place": w.place, "path": w.path, "seen": w.seen}
                                      for w in self.writes],
            "store_changes": store_diff(self.store_before, self.store_after),
            "model_requests": self.model_requests, "failed_requests": self.failed_requests,
            "prompt_tokens": self.prompt_tokens,
            "stderr_tail": self.stderr[-1500:] if self.exit_code or self.timed_out else "",
        }


def store_diff(before: dict[str, str], after: dict[str, str]) -> dict[str, Any]:
    return {"created": {p: after[p] for p in sorted(after.keys() - before.keys())},
            "changed": {p: after[p] for p in sorted(after.keys() & before.keys())
                        if after[p] != before[p]},
            "deleted": sorted(before.keys() - after.keys())}


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [s for item in value for s in _strings(item)]
    if isinstance(value, dict):
        return [s for item in value.values() for s in _strings(item)]
    return []


def _command(arguments: dict[str, Any]) -> str:
    """A shell tool's command line (a string, or argv joined)."""
    for key in ("command", "cmd", "script", "input"):
        value = arguments.get(key)
        if isinstance(value, str):
            return value
        if isinstance(value, list):
            return " ".join(str(part) for part in value)
    return ""


def _ok(call: model_apis.ToolCall) -> bool | None:
    if call.result is None:
        return None
    return not call.is_error and not _ERROR_JSON.search(call.result)


def memory_calls(call: model_apis.ToolCall) -> list[MemoryCall]:
    """The memory operations one tool call made (several for a shell line)."""
    matched = _MCP.match(call.name)
    if matched:
        op = matched.group(1).removeprefix("memory_").replace("result_continue", "continue")
        path = call.arguments.get("path")
        query = call.arguments.get("query")
        return [MemoryCall(op, "mcp", str(path) if path is not None else None,
                           str(query) if query is not None else None, _ok(call))]
    if not SHELL_TOOLS.match(call.name):
        return []
    found = []
    for verb, rest in _CLI.findall(_command(call.arguments)):
        words = rest.split()
        op = _CLI_OPS[verb]
        first = words[0].strip("'\"") if words else None
        found.append(MemoryCall(op, "cli", first if op in ("get", "upsert", "forget") else None,
                                rest.strip() if op == "search" else None, _ok(call)))
    return found


def place_of(path: str, root: Path) -> Place | None:
    """Where a written path is, relative to a run root (None: the agent's bookkeeping or
    scratch space, not a place a memory would be kept)."""
    absolute = PurePosixPath(path)
    relative: PurePosixPath | None = None
    try:
        relative = absolute.relative_to(PurePosixPath(root))
    except ValueError:
        if not absolute.is_absolute():
            relative = PurePosixPath("work") / absolute
    name = absolute.name.lower()
    if relative is None:  # outside the run root: a file the agent should not have touched
        if name in INSTRUCTION_FILES:
            return "agents_md"
        if NATIVE_SEGMENTS & {part.lower() for part in absolute.parts} or name == "memory.md":
            return "native_memory"
        return "local_note"
    parts = relative.parts
    if not parts:
        return None
    if parts[0] == "work":
        return "agents_md" if name in INSTRUCTION_FILES else "repository"
    if parts[0] == "home":
        lowered = {part.lower() for part in parts[1:]}
        if lowered & NATIVE_SEGMENTS or name in INSTRUCTION_FILES or name == "memory.md":
            return "native_memory"
        if relative.suffix.lower() in NOTE_SUFFIXES:
            return "local_note"
    return None


def call_writes(call: model_apis.ToolCall, root: Path) -> list[Write]:
    """Writes a non-memory tool call made or tried to make, by the paths it names."""
    targets: list[str] = []
    payload = json.dumps(call.arguments, ensure_ascii=False)
    if WRITE_TOOLS.match(call.name):
        targets += [str(call.arguments[k]) for k in _PATH_KEYS
                    if isinstance(call.arguments.get(k), str)]
        for text in _strings(call.arguments):
            targets += [m.strip() for m in _PATCH.findall(text)]
    elif SHELL_TOOLS.match(call.name):
        command = _HEREDOC.sub("", _command(call.arguments))
        targets += [t for t in _REDIRECT.findall(command)
                    if not t.startswith(("&", "/dev/")) and t not in ("-", "2")]
    writes = []
    for target in dict.fromkeys(targets):
        absolute = target if target.startswith("/") else str(PurePosixPath(root, "work",
                                                                             target))
        place = place_of(absolute, root)
        if place is not None:
            writes.append(Write(place, target, payload, "call"))
    return writes


def mentions(text: str, token: str) -> bool:
    """`token` as a whole word (a plural `s` allowed), case-insensitive."""
    return re.search(rf"(?<!\w){re.escape(token)}s?(?!\w)", text, re.IGNORECASE) is not None


def file_writes(changes: dict[str, FileState | None], root: Path,
                tokens: tuple[str, ...]) -> list[Write]:
    """Files that changed under the run root where a memory should not be kept. Text files
    in the agent's home count as local notes only when they carry one of `tokens` (agents
    unpack their own Markdown there: skills, caches)."""
    writes = []
    for relative, state in sorted(changes.items()):
        place = place_of(str(PurePosixPath(root, relative)), root)
        if place is None:
            continue
        if state is None and place in ("repository", "local_note"):
            continue  # deleting an ordinary file is no memory written
        text = (state.text or "") if state is not None else ""
        if place == "local_note" and not any(mentions(text, token) for token in tokens):
            continue
        writes.append(Write(place, relative, text, "file"))
    return writes


def collect(turn: Turn, exchanges: list[Exchange], changes: dict[str, FileState | None],
            root: Path, tokens: tuple[str, ...]) -> Turn:
    """Fill `turn` from the session's exchanges and file changes (`tokens`: the facts of
    the scenario, which make a new text file in the agent's home a local note)."""
    calls: dict[str, model_apis.ToolCall] = {}
    for exchange in exchanges:
        if exchange.api is None:
            continue
        if exchange.status >= 400 or exchange.error:
            detail = exchange.error or exchange.response[:300].decode("utf-8", "replace")
            turn.failed_requests.append(f"{exchange.status} {exchange.path}: {detail}")
        if not exchange.model_request:
            continue
        turn.model_requests += 1
        turn.answered_requests += exchange.status == 200
        turn.prompt_tokens.append(exchange.parsed().prompt_tokens)
        turn.content_chars.append(model_apis.size(exchange.api, exchange.body).content_chars)
        for call in model_apis.tool_calls(exchange.api, exchange.body):
            calls[call.call_id] = call
    for call in calls.values():
        found = memory_calls(call)
        turn.memory_calls += found
        if not found:
            arguments = json.dumps(call.arguments, ensure_ascii=False)
            turn.call_texts.append(arguments)
            turn.other_calls.append(f"{call.name}({arguments[:200]})")
            turn.writes += call_writes(call, root)
    turn.writes += file_writes(changes, root, tokens)
    return turn
