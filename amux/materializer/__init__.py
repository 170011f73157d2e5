"""The materializer for isolated launches as another Unix user: copies the single-file
standard-library client and a 0600 connection config into `<run>/agent-config/memory/`.

Not built yet: see SPEC §6.
"""
