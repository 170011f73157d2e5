"""What agents are taught to write (issue 36): every rule of the design's note format reaches
the agent through the protocol, the tool schemas or the note guide the protocol points to;
the tools say when to use them in the protocol's words; the fixed cost stays in budget."""

from __future__ import annotations

import hashlib
import json

import pytest

from amux.client.tools import TOOLS
from amux.encoding import encode
from amux.protocol.render import CHANNELS, GUIDE_PATH, Channel, guide, render, version

BUDGET_BYTES = 6000
"""The fixed per-session cost of one rendering: the protocol plus the tool schemas."""

GUIDE = guide().decode()
SCHEMAS = encode(TOOLS).decode()

# Each rule of the note format (seed 004 Appendix A, SPEC §2 "Content model") and the
# words that carry it: (where, words). "protocol" is checked in both renderings.
RULES: dict[str, list[tuple[str, str]]] = {
    "one fact per topic document": [("protocol", "one fact per topic document"),
                                    ("guide", "One fact per topic document"),
                                    ("schemas", "one fact")],
    "front matter name and description for the model": [
        ("guide", "name: short-kebab-case-slug"),
        ("guide", "description: one line saying what this holds, written for a model "
                  "deciding whether it is relevant"),
        ("schemas", "front matter name, description, metadata.type")],
    "metadata.type of user|feedback|project|reference": [
        ("guide", "type: user | feedback | project | reference"),
        ("guide", "`user`: who the user is"), ("guide", "`feedback`: how the user wants"),
        ("guide", "`project`: ongoing work"), ("guide", "`reference`: pointers")],
    "Why and How to apply for feedback and project": [
        ("guide", "**Why:**"), ("guide", "**How to apply:**"),
        ("guide", "(for feedback and project)")],
    "[[name]] links": [("guide", "`[[name]]`, the other document's `name`"),
                       ("guide", "with no document yet is fine")],
    "MEMORY.md an index of one line per topic, never content": [
        ("protocol", "MEMORY.md a short index"),
        ("guide", "one line per topic, `- [Title](path.md) — hook`"),
        ("guide", "never the content itself"), ("schemas", "its line in the MEMORY.md index")],
    "look for an existing document and update it": [
        ("protocol", "update, never duplicate"),
        ("guide", "search for a document that already covers it and update that one"),
        ("schemas", "update the document that covers it rather than add a duplicate")],
    "delete what turned out wrong": [("protocol", "To correct or forget"),
                                     ("guide", "forget a document that turned out wrong"),
                                     ("schemas", "Use when a memory proves wrong or stale")],
    "not what the repository records or only this conversation": [
        ("guide", "Don't save what the repository already records"),
        ("guide", "what only matters to this conversation"),
        ("guide", "ask what was non-obvious about it and save that")],
    "relative dates become absolute": [("protocol", "absolute dates"),
                                       ("guide", "convert relative dates when you save"),
                                       ("schemas", "absolute dates")],
    "the stable project id": [("protocol", "projects/<stable id>/ from the repo remote"),
                              ("guide", "`git@github.com:acme/shop.git`"),
                              ("guide", "never a local directory name")],
    "what the user said, nothing invented or inverted": [
        ("guide", "Save what the user said, not what you infer"),
        ("guide", "a fact about the user stays about the user")],
}


def _text(where: str, channel: Channel) -> str:
    return {"protocol": render(channel), "guide": GUIDE, "schemas": SCHEMAS}[where]


@pytest.mark.parametrize("rule", sorted(RULES))
def test_each_rule_reaches_the_agent(rule: str) -> None:
    for channel in CHANNELS:
        for where, words in RULES[rule]:
            if where == "schemas" and channel == "cli":
                continue  # the CLI rendering has no tool schemas; the guide carries it
            assert words in _text(where, channel), f"{rule}: {where} ({channel}): {words!r}"


@pytest.mark.parametrize("channel", CHANNELS)
def test_the_protocol_points_to_the_guide_once_before_saving(channel: Channel) -> None:
    text = render(channel)
    reading = {"mcp": f"memory_get {GUIDE_PATH}", "cli": f"`amux memory show {GUIDE_PATH}`"}
    assert f"Read the note guide once first ({reading[channel]})" in text
    assert GUIDE.startswith(f"# How to write amux memory (protocol v{version()})\n")


# Each tool says when to use it, in the protocol's words.
WHEN = {
    "memory_search": "Use before answering about past work, decisions, preferences, "
                     "conventions or a repeated question",
    "memory_get": "Use once per session for the entry MEMORY.md",
    "memory_upsert": "Use when the user asks you to remember something or corrects a "
                     "preference, or a lesson is verified",
    "memory_forget": "Use when a memory proves wrong or stale",
    "result_continue": "Use when an amux tool result ended with a continuation token",
}


def test_every_tool_says_when() -> None:
    assert {tool["name"] for tool in TOOLS} == set(WHEN)
    for tool in TOOLS:
        assert tool["description"].startswith(WHEN[tool["name"]]), tool["name"]
    protocol = render("mcp")
    for words in ("past work, decisions, preferences, conventions or a repeated question",
                  "MEMORY.md once", '"remember"', "verified lessons"):
        assert words in protocol  # the tools repeat the protocol's own words


def test_the_fixed_cost_is_in_budget_and_the_guide_is_not_part_of_it() -> None:
    costs = {channel: len(render(channel).encode()) + (len(SCHEMAS.encode())
                                                       if channel == "mcp" else 0)
             for channel in CHANNELS}
    assert max(costs.values()) < BUDGET_BYTES, costs
    assert len(guide()) > 1500  # read on demand, once, by a session that saves


DIGESTS = {"2": "647242f89ec5b35b8ba959fea1da7f56d2e78c657b176bc3e9d57b459cf1fbcc"}
"""What version 2 teaches (the protocol's renderings, the guide, the tool schemas)."""


def _digest() -> str:
    parts = [render(channel) for channel in CHANNELS] + [GUIDE, SCHEMAS]
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()


def test_the_text_is_pinned_per_version() -> None:
    """The protocol, the guide and the tool schemas change together with the protocol's
    version: a change without a new version (and a new pin here) fails."""
    assert _digest() == DIGESTS[version()], (
        f"the taught text changed: bump `version` in amux/protocol/protocol.md and pin "
        f"{_digest()} for it here")

