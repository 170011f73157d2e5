"""A scripted mock model server on loopback that stands in for the paid model in agent tests."""

from tests.mockmodel.apis import ToolResult
from tests.mockmodel.script import EXHAUSTED, SIDE_ANSWER, Script, Step, Text, ToolCall, mcp
from tests.mockmodel.server import CallResult, MockModel, Recorded, default_is_side, first

__all__ = [
    "EXHAUSTED",
    "SIDE_ANSWER",
    "CallResult",
    "MockModel",
    "Recorded",
    "Script",
    "Step",
    "Text",
    "ToolCall",
    "ToolResult",
    "default_is_side",
    "first",
    "mcp",
]
