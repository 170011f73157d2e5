"""The `world` of isolated-run tests (tests/isolation/world.py)."""

from tests.isolation.world import world  # noqa: F401 (the fixture)
