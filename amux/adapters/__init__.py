"""Per-agent adapters (Codex, Claude Code, Pi, fallback), one module each behind one
interface. Adapters are pure: given the frozen binding they return a launch plan
(argv, environment patch, files, warnings) and never touch the Hub or memory files.

Not built yet: see SPEC §6.
"""
