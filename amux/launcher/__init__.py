"""The launcher (`amux run`): resolves and freezes a memory binding, writes the session
start state, applies an adapter's launch plan, supervises the agent and cleans up.

Not built yet: see SPEC §6. Imports `amux.adapters`, `amux.client`, `amux.materializer`.
"""
