"""The standard-library client: CLI core, stdio MCP server and the fixed protocol text.

Not built yet (issues 3 and 4). It must import nothing outside the standard library
(never the store, the Hub or rich), because it is copied as one file into isolated
runs and executed by another user's `python3`.
"""
