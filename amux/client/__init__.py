"""The standard-library client: connection lookup, HTTP transport, the `amux memory` CLI,
the stdio MCP server and the single-file bundle.

It must import nothing outside the standard library (never the store, the Hub or
rich), because it is copied as one file into isolated runs and executed by another
user's `python3` (3.9 or newer). docs/hub.md, docs/mcp.md.
"""
