"""What the scripted model answers: a conversation is a list of steps, one per model request.

A step is `Text("…")` (a plain answer: the agent ends its turn) or `ToolCall(name, arguments)`
(the agent runs the tool and sends the result back in its next request, which gets the next
step). `ToolCall.server` names the MCP server a tool comes from; each model API spells it its own
way (`mcp__amux__memory_search` for Claude, `namespace: "mcp__amux"` for Codex,
`mcp_amux_memory_search` for Gemini CLI); leave it None for the agent's own tools (Pi's
`bash`, Claude's `Bash`, Gemini's `run_shell_command`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Text:
    """A plain text answer that ends the agent's turn (sent after `delay` seconds)."""

    text: str
    delay: float = 0.0


@dataclass(frozen=True)
class ToolCall:
    """One tool call; `server` is the MCP server name for MCP tools (None: a built-in tool).
    The answer is sent after `delay` seconds."""

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    server: str | None = None
    delay: float = 0.0

    def claude_name(self) -> str:
        """The tool's name in the Anthropic Messages API (`mcp__SERVER__TOOL`)."""
        return f"mcp__{self.server}__{self.name}" if self.server else self.name

    def gemini_name(self) -> str:
        """The tool's name in Gemini CLI's `functionDeclarations` (`mcp_SERVER_TOOL`; 0.61.0,
        `generateValidName`: characters outside `[A-Za-z0-9_.:-]` become `_`)."""
        if not self.server:
            return self.name
        return re.sub(r"[^a-zA-Z0-9_\-.:]", "_", f"mcp_{self.server}_{self.name}")

    def namespace(self) -> str | None:
        """The Responses API namespace of an MCP tool as Codex lists it (`mcp__SERVER`)."""
        return f"mcp__{self.server}" if self.server else None

    def arguments_json(self) -> str:
        return json.dumps(self.arguments, ensure_ascii=False, separators=(",", ":"))


def mcp(name: str, arguments: dict[str, Any] | None = None, server: str = "amux") -> ToolCall:
    """A call to a tool of an MCP server (`amux` by default)."""
    return ToolCall(name, arguments or {}, server)


Step = Text | ToolCall
Script = list[Step]

SIDE_ANSWER = "ok"
"""What every request outside the main conversation (titles, quota probes, sub-agents) gets."""

EXHAUSTED = "(mock model: script exhausted)"
"""The answer to a continuation after the script's last step (recorded with `exhausted`)."""
