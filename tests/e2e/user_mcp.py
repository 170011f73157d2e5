"""A user's own stdio MCP server, for tests that need one beside amux's: two tools,
`user_lookup` and `user_ping`, each answering "user tool". Standard library only, one
JSON-RPC message a line.

    python tests/e2e/user_mcp.py   # serves until stdin ends

Claude Code first sends `server/discover`; it gets an error at once, like every unknown
method (see AGENT-RECIPES.md), then `initialize`, `tools/list`, `tools/call`.
"""

from __future__ import annotations

import json
import sys
from typing import Any

TOOLS = [{"name": name, "description": f"The user's own {name}.",
          "inputSchema": {"type": "object", "properties": {"x": {"type": "string"}}}}
         for name in ("user_lookup", "user_ping")]


def answer(method: str, params: dict[str, Any]) -> dict[str, Any]:
    if method == "initialize":
        return {"result": {"protocolVersion": params.get("protocolVersion", "2025-06-18"),
                           "capabilities": {"tools": {}},
                           "serverInfo": {"name": "user-mcp", "version": "0"}}}
    if method == "tools/list":
        return {"result": {"tools": TOOLS}}
    if method == "tools/call":
        return {"result": {"content": [{"type": "text", "text": "user tool"}]}}
    if method == "ping":
        return {"result": {}}
    return {"error": {"code": -32601, "message": f"method not found: {method}"}}


def main() -> int:
    for line in sys.stdin:
        message = json.loads(line)
        if not isinstance(message, dict) or "id" not in message:
            continue  # a notification
        reply = {"jsonrpc": "2.0", "id": message["id"],
                 **answer(str(message.get("method")), message.get("params") or {})}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
