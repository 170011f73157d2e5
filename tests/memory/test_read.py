"""get (SPEC §3, Appendix A): line ranges, offset paging, budget, staleness."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from amux.encoding import encode
from amux.errors import InvalidArgument, NotUtf8
from amux.memory import Scope, Store
from amux.memory.lines import line_count
from amux.memory.revision import ABSENT, revision_of

BUDGET = 8192


def _page_all(store: Store, scope: Scope, path: str, end_line: int = 0) -> list[dict[str, object]]:
    pages = [store.get(scope, path, end_line=end_line)]
    while pages[-1]["truncated"]:
        offset = pages[-1]["next_offset"]
        pages.append(store.get(scope, path, end_line=end_line, offset=offset))
    return pages


@pytest.mark.parametrize(
    ("content", "lines"), [(b"", 0), (b"a", 1), (b"a\n", 1), (b"a\nb", 2), (b"\n\n", 2)]
)
def test_line_count_definition(content: bytes, lines: int) -> None:
    assert line_count(content) == lines


def test_missing_document(store: Store, scope: Scope) -> None:
    assert store.get(scope, "nope/none.md") == {
        "path": "nope/none.md", "exists": False, "revision": "absent", "content": "",
        "start_line": 0, "end_line": 0, "total_lines": 0, "truncated": False,
        "next_offset": None, "modified_at": None, "stale_note": None,
    }


def test_whole_small_document(store: Store, scope: Scope) -> None:
    store.upsert(scope, "a.md", "one\ntwo\nthree", ABSENT)
    page = store.get(scope, "a.md")
    assert list(page) == [
        "path", "exists", "revision", "content", "start_line", "end_line", "total_lines",
        "truncated", "next_offset", "modified_at", "stale_note",
    ]
    assert page["content"] == "one\ntwo\nthree"
    assert (page["start_line"], page["end_line"], page["total_lines"]) == (1, 3, 3)
    assert page["revision"] == revision_of(b"one\ntwo\nthree")
    assert page["truncated"] is False and page["next_offset"] is None


def test_inclusive_line_ranges(store: Store, scope: Scope) -> None:
    store.upsert(scope, "a.md", "l1\nl2\nl3\nl4\n", ABSENT)
    assert store.get(scope, "a.md", start_line=2, end_line=3)["content"] == "l2\nl3\n"
    assert store.get(scope, "a.md", start_line=3, end_line=3)["content"] == "l3\n"
    assert store.get(scope, "a.md", start_line=0, end_line=1)["content"] == "l1\n"
    assert store.get(scope, "a.md", start_line=4)["content"] == "l4\n"
    beyond = store.get(scope, "a.md", start_line=3, end_line=99)
    assert (beyond["content"], beyond["start_line"], beyond["end_line"]) == ("l3\nl4\n", 3, 4)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"start_line": 5}, "past the end"),
        ({"start_line": 3, "end_line": 2}, "before start_line"),
        ({"start_line": 2, "offset": 3}, "either start_line or offset"),
        ({"start_line": -1}, "non-negative"),
        ({"end_line": "2"}, "non-negative"),
        ({"offset": True}, "non-negative"),
        ({"offset": 99}, "past the end"),
    ],
)
def test_bad_ranges_are_invalid_arguments(
    store: Store, scope: Scope, kwargs: dict[str, object], message: str
) -> None:
    store.upsert(scope, "a.md", "l1\nl2\nl3\nl4\n", ABSENT)
    with pytest.raises(InvalidArgument) as caught:
        store.get(scope, "a.md", **kwargs)  # type: ignore[arg-type]
    assert message in caught.value.message


def test_offset_inside_a_character_is_refused(store: Store, scope: Scope) -> None:
    store.upsert(scope, "a.md", "记忆\n", ABSENT)
    with pytest.raises(InvalidArgument):
        store.get(scope, "a.md", offset=1)
    assert store.get(scope, "a.md", offset=3)["content"] == "忆\n"


def test_pages_fit_the_budget_end_on_lines_and_reassemble(store: Store, scope: Scope) -> None:
    lines = [f"{i:05d} " + "x" * 93 + "\n" for i in range(600)]  # 100 bytes each
    content = "".join(lines)
    store.upsert(scope, "big.md", content, ABSENT)
    pages = _page_all(store, scope, "big.md")
    assert len(pages) > 5
    assert "".join(str(p["content"]) for p in pages) == content
    for page in pages:
        size = len(encode(page))
        assert size <= BUDGET
        assert str(page["content"]).endswith("\n")
        if page["truncated"]:
            assert size > BUDGET - 100 - 64  # nearly full: the next line would not fit
    assert pages[1]["start_line"] == int(pages[0]["end_line"]) + 1  # type: ignore[call-overload]
    assert {p["revision"] for p in pages} == {revision_of(content.encode())}


def test_end_line_holds_across_continuations(store: Store, scope: Scope) -> None:
    content = "".join(f"line {i} " + "y" * 90 + "\n" for i in range(1, 301))
    store.upsert(scope, "big.md", content, ABSENT)
    pages = _page_all(store, scope, "big.md", end_line=150)
    assert "".join(str(p["content"]) for p in pages) == "".join(content.splitlines(True)[:150])
    assert pages[-1]["end_line"] == 150 and pages[-1]["truncated"] is False


def test_a_single_long_line_is_cut_on_character_boundaries(store: Store, scope: Scope) -> None:
    content = "记" * 10_000 + "\nend\n"  # one 30,000-byte line
    store.upsert(scope, "long.md", content, ABSENT)
    pages = _page_all(store, scope, "long.md")
    assert "".join(str(p["content"]) for p in pages) == content
    assert all(len(encode(p)) <= BUDGET for p in pages)
    assert pages[0]["start_line"] == pages[0]["end_line"] == 1
    assert pages[1]["start_line"] == 1  # continues inside line 1
    assert int(pages[0]["next_offset"]) % 3 == 0  # type: ignore[call-overload]


def test_escapes_count_against_the_budget(store: Store, scope: Scope) -> None:
    content = ('"\\\x01\t' * 1000 + "\n") * 4  # JSON escaping expands this ~3.5x
    store.upsert(scope, "esc.md", content, ABSENT)
    pages = _page_all(store, scope, "esc.md")
    assert "".join(str(p["content"]) for p in pages) == content
    assert all(len(encode(p)) <= BUDGET for p in pages)


def test_staleness_note_from_mtime(memory_root: Path, scope: Scope) -> None:
    with Store(memory_root) as writer:
        writer.upsert(scope, "old.md", "fact\n", ABSENT)
    mtime = (memory_root / "global" / "old.md").stat().st_mtime
    with Store(memory_root, wall_clock=lambda: mtime + 86_399) as fresh:
        assert fresh.get(scope, "old.md")["stale_note"] is None
    with Store(memory_root, wall_clock=lambda: mtime + 3 * 86_400 + 5) as later:
        note = later.get(scope, "old.md")["stale_note"]
    assert note == (
        "This memory is 3 days old. Memories are point-in-time observations, not live state; "
        "verify claims about code or files before asserting them."
    )
    os.utime(memory_root / "global" / "old.md", (0, 0))
    with Store(memory_root) as store:
        assert store.get(scope, "old.md")["modified_at"] == "1970-01-01T00:00:00Z"


def test_not_utf8_on_disk_is_reported(memory_root: Path, store: Store, scope: Scope) -> None:
    store.upsert(scope, "ok.md", "x", ABSENT)
    (memory_root / "global" / "bad.md").write_bytes(b"caf\xe9\n")
    with pytest.raises(NotUtf8) as caught:
        store.get(scope, "bad.md")
    assert "byte 3" in caught.value.message
