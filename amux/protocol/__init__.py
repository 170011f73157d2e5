"""The fixed memory protocol (SPEC §5): one reviewed text file, rendered per channel."""
