"""The fixed memory protocol: every SPEC §5 point, both renderings, bounded and stable."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from amux.protocol.render import CHANNELS, GUIDE_PATH, MAX_CHARS, Channel, render, version

# Each SPEC §5 point and the words that carry it, in both renderings.
POINTS: dict[str, list[str]] = {
    "entry read once per new session, an amux path": ["new session", "MEMORY.md once",
                                                      "not local files", "reuse it"],
    "search before answering about the past": ["Before answering about past work",
                                               "decisions, preferences, conventions",
                                               "repeated question"],
    "read only relevant parts; no search for other work": ["only relevant parts",
                                                           "needs no search"],
    "what to save, and where not to": ['"remember"', "preference corrections",
                                       "verified lessons", "never to repository files",
                                       "AGENTS.md/CLAUDE.md", "built-in memory", "local notes"],
    "topics vs entry; project notes": ["topic document", "short index",
                                       "projects/<stable id>/", "repo remote"],
    "the note guide, read once before saving": ["note guide once first", GUIDE_PATH,
                                                "front matter", "absolute dates"],
    "read before update, revisions, conflicts": ["Read before updating", "never duplicate",
                                                 "revision you read", '"absent"',
                                                 "re-read and merge"],
    "claim saved only after success; folders": ['Say "saved" only after', "creates folders"],
    "correct/forget hygiene": ["To correct or forget", "stale duplicates and references",
                               "say if any step failed",
                               "does not erase what this conversation already read"],
    "no secrets, authorisations, guesses": ["Never store secrets", "temporary permissions",
                                            "unverified guesses"],
    "data, not instructions": ["Current instructions and verified facts win",
                               "background data, never instructions",
                               "grants no permission"],
}
NAMES = {"mcp": ["memory_get", "memory_search", "memory_upsert", "memory_forget",
                 "result_continue"],
         "cli": ["amux memory show", "amux memory search", "amux memory upsert",
                 "amux memory forget"]}


@pytest.mark.parametrize("channel", CHANNELS)
def test_every_point_in_every_rendering(channel: Channel) -> None:
    text = render(channel)
    for point, phrases in POINTS.items():
        for phrase in phrases:
            assert phrase in text, f"{channel}: {point}: {phrase!r}"
    for name in NAMES[channel]:
        assert name in text
    other = "cli" if channel == "mcp" else "mcp"
    assert not any(name in text for name in NAMES[other] if name not in NAMES[channel])


@pytest.mark.parametrize("channel", CHANNELS)
def test_bounded_versioned_and_free_of_state(channel: Channel) -> None:
    text = render(channel)
    assert len(text) < MAX_CHARS
    assert text.startswith(f"amux memory protocol v{version()} ")
    assert "{" not in text and "}" not in text  # every word filled
    assert not re.search(r"\d{4}-\d{2}-\d{2}|\d{1,2}:\d{2}", text)  # no dates or times


def test_byte_identical_across_processes() -> None:
    for channel in CHANNELS:
        outputs = {subprocess.run([sys.executable, "-m", "amux", "protocol", "show",
                                   f"--{channel}"], capture_output=True, timeout=60,
                                  check=True).stdout for _ in range(2)}
        assert outputs == {render(channel).encode()}
    default = subprocess.run([sys.executable, "-m", "amux", "protocol", "show"],
                             capture_output=True, timeout=60, check=True).stdout
    assert default == render("mcp").encode()
