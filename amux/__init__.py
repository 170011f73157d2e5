"""amux: one shared, on-demand, file-based long-term memory for coding agents."""

__version__ = "0.1.0"
