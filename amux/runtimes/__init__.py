"""Drivers a Runtime uses to run agents with amux memory.

A Runtime is a program that embeds an agent and drives it through the agent's own
programmatic interface, rather than launching its CLI with `amux run`. What it must
still get right is what the adapters compute for a launch: the memory protocol in the
agent's instructions, the memory tools, and the agent's native memory off. Each module
here drives one agent's interface with that in mind: `codex_appserver` drives
`codex app-server`.

Unlike the adapters, these drivers start and talk to processes. They may import from
`amux.adapters` (the settings an agent's suppression needs); adapters never import
them. docs/runtimes.md.
"""
