"""Property tests of the memory store against reference models written from the SPEC.

Each property compares `amux.memory` with a small, deliberately naive model of the
contract (SPEC §2 path rules, §3/Appendix A search and get paging) and fails when the
behaviour drifts from it:

1. paths    — `validate_path` accepts exactly what the §2 predicate accepts; an
              accepted upsert creates exactly `root/global/<path>` (and its parents)
              and nothing else; a refused one changes nothing on disk.
2. round trip — any UTF-8 document up to 64 KiB reads back byte-exact by paging
              `get`, with revision = SHA-256, and every page fits the 8 KiB budget
              (including a page filled to the brim).
3. line ranges — paging a 1-based inclusive line range reassembles exactly those
              lines; pages end on line boundaries unless one line alone is too big.
4. search   — results, ranking, matched terms, path hits and hit lines equal a
              brute-force reference of SPEC §3 / Appendix A.
5. prefix   — `path_prefix` restricts results to whole-segment matches only.

Sharper cases of 4 and 5: equally matched documents ordered by the title alone
(front matter `name:` and the first heading, never their look-alikes); a cut
snippet still shows its match; searches that warmed the store's caches still see
every later change, through the store or behind its back; a prefix continuing below
a document's name is valid and names nothing (empty, not an error).

Every example builds its own store in a fresh temporary directory (no function-scoped
fixture is shared between Hypothesis examples).
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import os
import re
import stat
import tempfile
import time
import unicodedata
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import assume, event, example, given, settings
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument as HypothesisInvalidArgument

from amux.errors import InvalidPath
from amux.memory import GLOBAL, Store, secretguard
from amux.memory.paths import validate_path

with warnings.catch_warnings():
    # On a failure Hypothesis lazily imports libcst (to suggest a patch); under the
    # project's `filterwarnings = error` libcst's own DeprecationWarning would then turn
    # a clean falsifying-example report into a pytest INTERNALERROR. Import it first.
    warnings.simplefilter("ignore", DeprecationWarning)
    with contextlib.suppress(ImportError):
        import libcst  # noqa: F401

BUDGET = 8192
"""Storage response budget (SPEC §2 limits, Appendix A serialization)."""
SLACK = 32
"""Bytes a page may leave unused (reserved for fields that change size between pages)."""
TOPIC_MAX = 64 * 1024
SNIPPET_MAX = 240
HITS_MAX = 3


def compact(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@contextmanager
def fresh_store() -> Iterator[tuple[Path, Store]]:
    """A new store rooted at `<tmp>/memory`; yields `(<tmp>, store)`."""
    with tempfile.TemporaryDirectory(prefix="amux-prop-") as tmp:
        base = Path(tmp)
        with Store(base / "memory") as store:
            yield base, store


# ---------------------------------------------------------------------------------
# 1. Paths
# ---------------------------------------------------------------------------------


def reference_accepts(path: str) -> bool:
    """SPEC §2 logical path rules, written independently of amux.memory.paths."""
    if path == "":
        return False
    try:
        encoded = path.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogate: not UTF-8 at all
        return False
    if len(encoded) > 1024:
        return False
    if path.startswith("/") or "\\" in path:
        return False
    if any(unicodedata.category(char) in ("Cc", "Cf") for char in path):  # controls, invisibles
        return False
    if not path.endswith(".md"):
        return False
    for segment in path.split("/"):
        if segment in ("", ".", "..") or segment.startswith("."):
            return False
        if len(segment.encode("utf-8")) > 255:
            return False
    return True


SPECIAL_PATH_CHARS = [
    "/", "/", ".", "\\", "\x00", "\x01", "\t", "\n", "\r", "\x1f", "\x7f", "\x80", "\x85",
    "\x9f", "\ud800", "\udfff", " ", "é", "中", "😀", "\u2028", "\ufeff", "\u200b", "a", "M",
    "-", ":", "*", "~",
]
path_chars = st.one_of(
    st.sampled_from(SPECIAL_PATH_CHARS),
    st.characters(codec=None, exclude_categories=()),  # anything, surrogates included
)
LONG_UNITS = ["a", "é", "中", "😀"]  # 1, 2, 3 and 4 UTF-8 bytes


def exact_bytes(unit: str, size: int) -> str:
    """A string of exactly `size` UTF-8 bytes made mostly of `unit`."""
    width = len(unit.encode("utf-8"))
    return "a" * (size % width) + unit * (size // width)


@st.composite
def long_segment(draw: st.DrawFn, reserve: int = 0) -> str:
    """A segment whose byte length (plus `reserve`) straddles the 255-byte limit."""
    unit = draw(st.sampled_from(LONG_UNITS))
    size = draw(st.integers(250, 260)) - reserve
    return exact_bytes(unit, max(size, 1))


plain_segment = st.one_of(
    st.sampled_from(
        ["", ".", "..", "...", ".hidden", "..a", "a", "b.md", ".md", "md", " ", "a b", "x."]
    ),
    st.text(path_chars, min_size=1, max_size=8),
    long_segment(),
)
ENDINGS = [".md", ".md", ".md", ".md", "", ".MD", ".md/", ".markdown", ".md.txt", "/.md",
           ".md\x00", ".md ", "/"]


@st.composite
def structured_paths(draw: st.DrawFn) -> str:
    lead = draw(st.sampled_from(["", "", "", "", "/", "./", "../", "//"]))
    parents = draw(st.lists(plain_segment, max_size=5))
    ending = draw(st.sampled_from(ENDINGS))
    if draw(st.integers(0, 3)) == 0:
        stem = draw(long_segment(reserve=len(ending.encode("utf-8"))))
    else:
        stem = draw(plain_segment)
    return lead + "/".join([*parents, stem]) + ending


@st.composite
def near_limit_paths(draw: st.DrawFn) -> str:
    """Legal-looking paths whose total size straddles the 1,024-byte limit."""
    total = draw(st.integers(1016, 1032))
    seg_bytes = draw(st.integers(100, 256))
    unit = draw(st.sampled_from(["a", "é", "中"]))
    parts = []
    remaining = total - len(".md")
    while remaining > seg_bytes + 1:
        parts.append(exact_bytes(unit, seg_bytes))
        remaining -= seg_bytes + 1
    parts.append(exact_bytes(unit, remaining))
    return "/".join(parts) + ".md"


any_paths = st.one_of(
    st.text(path_chars, max_size=30),
    st.text(path_chars, max_size=20).map(lambda text: text + ".md"),
    structured_paths(),
    structured_paths(),
    near_limit_paths(),
    st.sampled_from([1, 2, 50, 200]).map(lambda depth: "d/" * depth + "x.md"),
)


def snapshot(base: Path) -> dict[str, tuple[str, int, bytes | None]]:
    """Every entry below `base` (never following symlinks): kind, mode, file bytes."""
    tree: dict[str, tuple[str, int, bytes | None]] = {}
    for dirpath, dirnames, filenames in os.walk(base):
        for name in dirnames + filenames:
            full = os.path.join(dirpath, name)
            info = os.lstat(full)
            rel = os.path.relpath(full, base)
            if stat.S_ISDIR(info.st_mode):
                tree[rel] = ("dir", stat.S_IMODE(info.st_mode), None)
            elif stat.S_ISREG(info.st_mode):
                tree[rel] = ("file", stat.S_IMODE(info.st_mode), Path(full).read_bytes())
            else:
                tree[rel] = ("other", stat.S_IMODE(info.st_mode), None)
    return tree


@settings(max_examples=400, deadline=None)
@given(path=any_paths)
@example(path="a/" * 510 + "x.md")  # exactly 1,024 bytes, 511 segments: legal
@example(path="a/" * 510 + "xy.md")  # 1,025 bytes
@example(path="a" * 252 + ".md")  # 255-byte segment: legal
@example(path="a" * 253 + ".md")  # 256-byte segment
@example(path="é" * 126 + "a.md")  # 256 bytes in 130 characters
@example(path="😀" * 63 + ".md")  # 255 bytes in 66 characters: legal
@example(path="a/\ud800.md")
@example(path="a/b\x7f.md")
@example(path="a/b\x85.md")  # C1 control (Cc) NEL
@example(path="a/b\u2028.md")  # line separator is Zl, not Cc: legal
@example(path="a\\b.md")
@example(path="a/./b.md")
@example(path="a/../b.md")
@example(path="a//b.md")
@example(path=".md")
@example(path="a/.git/b.md")
@example(path="a.md/b.md")
def test_path_rules_and_where_upsert_writes(path: str) -> None:
    accepted = reference_accepts(path)
    with fresh_store() as (base, store):
        before = snapshot(base)
        if not accepted:
            with pytest.raises(InvalidPath):
                validate_path(path)
            with pytest.raises(InvalidPath):
                store.upsert(GLOBAL, path, b"body\n", "absent")
            with pytest.raises(InvalidPath):
                store.get(GLOBAL, path)
            assert snapshot(base) == before
            return

        logical = validate_path(path)
        assert logical.text == path
        assert logical.segments == tuple(path.split("/"))
        result = store.upsert(GLOBAL, path, b"body\n", "absent")
        assert result == {"path": path, "revision": sha(b"body\n"), "created": True}
        after = snapshot(base)

        segments = path.split("/")
        scope_dir = os.path.join("memory", "global")
        new_dirs = {os.path.join(scope_dir, *segments[:depth]) for depth in range(len(segments))}
        document = os.path.join(scope_dir, *segments)
        # Nothing outside root/global changed, and inside it only the path and its parents.
        assert set(after) == set(before) | new_dirs | {document}
        for entry, value in before.items():
            assert after[entry] == value, entry
        for entry in new_dirs - set(before):
            assert after[entry] == ("dir", 0o700, None), entry
        assert after[document] == ("file", 0o600, b"body\n")
        assert (base / "memory" / "global" / Path(*segments)).read_bytes() == b"body\n"
        assert store.get(GLOBAL, path)["content"] == "body\n"


# ---------------------------------------------------------------------------------
# 2. Round trip and the page budget
# ---------------------------------------------------------------------------------


def line_count(data: bytes) -> int:
    """Appendix A: count of `\\n`, plus one if non-empty and not ending with `\\n`."""
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


def split_lines(data: bytes) -> list[bytes]:
    """The document's lines, each with its `\\n` (only `\\n` ends a line)."""
    parts = data.split(b"\n")
    lines = [part + b"\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    assert len(lines) == line_count(data)
    return lines


def line_of(data: bytes, index: int) -> int:
    """1-based line number of byte `index`."""
    return data.count(b"\n", 0, index) + 1


def check_page(page: dict[str, Any], data: bytes) -> None:
    size = len(compact(page))
    assert size <= BUDGET, f"page is {size} bytes of compact JSON; the budget is {BUDGET}"
    assert page["exists"] is True
    assert page["revision"] == sha(data)
    assert page["total_lines"] == line_count(data)


def read_pages(
    store: Store, path: str, data: bytes, *, start_line: int = 0, end_line: int = 0
) -> tuple[list[dict[str, Any]], list[int]]:
    """Page through `get` as a client would; returns the pages and each page's start byte."""
    begin = sum(len(line) for line in split_lines(data)[: max(start_line - 1, 0)])
    pages = [store.get(GLOBAL, path, start_line=start_line, end_line=end_line)]
    begins = [begin]
    while True:
        page = pages[-1]
        check_page(page, data)
        begin += len(page["content"].encode("utf-8"))
        if not page["truncated"]:
            assert page["next_offset"] is None
            return pages, begins
        assert page["content"] != "", "a truncated page must make progress"
        assert page["next_offset"] == begin, "next_offset is the byte offset after the page"
        assert len(pages) <= len(data) + 1
        pages.append(store.get(GLOBAL, path, end_line=end_line, offset=page["next_offset"]))
        begins.append(begin)


INTERESTING_TEXT = [
    "\n", "\r\n", "\r", "\x00", '"', "\\", "\x01", "\x1b", "\x1f", "\x7f", "\x85", "\t", "\b",
    "\f", "中文", "记忆", "😀", "👩‍💻", "é", "\u2028", "\u2029", "\ufeff", " ", "</", "x", "# ",
]
content_chars = st.characters(codec="utf-8")  # every encodable code point, controls included
chunks = st.one_of(
    st.sampled_from(INTERESTING_TEXT), st.text(content_chars, min_size=1, max_size=24)
)
repeats = st.one_of(st.integers(1, 8), st.integers(9, 4000))


def cut_utf8(text: str, max_bytes: int) -> str:
    """`text` cut to at most `max_bytes` UTF-8 bytes on a character boundary."""
    return text.encode("utf-8")[:max_bytes].decode("utf-8", "ignore")


@st.composite
def documents(draw: st.DrawFn) -> str:
    """Arbitrary UTF-8 text up to 64 KiB, from short to near the limit."""
    pieces = draw(st.lists(st.tuples(chunks, repeats), max_size=10))
    return cut_utf8("".join(chunk * count for chunk, count in pieces), TOPIC_MAX)


@settings(max_examples=120, deadline=None)
@given(text=documents())
@example(text="x" * 7929)  # one page at the budget: 8,193 bytes before commit 0434f6c
@example(text="a" * TOPIC_MAX)
@example(text="\x01" * 20000)
@example(text="")
def test_round_trip_by_paging(text: str) -> None:
    data = text.encode("utf-8")
    assume(not secretguard.scan(data))  # `'pypi-Ag' * 9` is a token's shape: refused, rightly
    with fresh_store() as (_, store):
        created = store.upsert(GLOBAL, "topic/doc.md", text, "absent")
        assert created["revision"] == sha(data)
        pages, _ = read_pages(store, "topic/doc.md", data)
        assert "".join(page["content"] for page in pages).encode("utf-8") == data
        assert (store.root / "global" / "topic" / "doc.md").read_bytes() == data


FILLERS = ["x", "é", "中", "😀", "\x01", '"', "\\", "\n", "a\n", "ab\r\n", "\x7f", "\u2028"]


@settings(max_examples=40, deadline=None)
@given(head=st.text(content_chars, max_size=40), filler=st.sampled_from(FILLERS))
def test_page_filled_to_the_brim_fits_the_budget(head: str, filler: str) -> None:
    """The longest document `head + filler*n` that still comes back in one page fits 8 KiB.

    A binary search on n finds the point where the store switches from one page to
    two, which is exactly where a page's reserve for its own fields is tested.
    """
    with fresh_store() as (_, store):
        revision = "absent"

        def write(count: int) -> bytes:
            nonlocal revision
            text = head + filler * count
            revision = store.upsert(GLOBAL, "f.md", text, revision)["revision"]
            return text.encode("utf-8")

        low, high = 0, BUDGET  # one page at `low`, more than one page at `high`
        while high - low > 1:
            middle = (low + high) // 2
            write(middle)
            if store.get(GLOBAL, "f.md")["truncated"]:
                high = middle
            else:
                low = middle
        for count in (low, high):
            data = write(count)
            pages, _ = read_pages(store, "f.md", data)
            assert "".join(page["content"] for page in pages).encode("utf-8") == data


# ---------------------------------------------------------------------------------
# 3. Line ranges
# ---------------------------------------------------------------------------------

line_chars = st.characters(codec="utf-8", exclude_characters="\n")
short_lines = st.text(line_chars, max_size=40)
long_lines = st.builds(
    lambda unit, count: unit * count,
    st.one_of(st.sampled_from(["x", "中", "\x01", '"', "😀", "é\r"]),
              st.text(line_chars, min_size=1, max_size=6)),
    st.integers(100, 6000),
)


@st.composite
def line_documents(draw: st.DrawFn) -> bytes:
    lines = draw(st.lists(st.one_of(short_lines, short_lines, long_lines), min_size=1,
                          max_size=80))
    text = "\n".join(lines) + draw(st.sampled_from(["", "\n"]))
    data = cut_utf8(text, TOPIC_MAX).encode("utf-8")
    return data or b"x"


def page_size_with(page: dict[str, Any], content: bytes) -> int:
    """Compact size of `page` had it carried `content` instead (other fields as they are)."""
    return len(compact({**page, "content": content.decode("utf-8")}))


def next_char_end(data: bytes, index: int) -> int:
    """End of the UTF-8 character that starts at `index`."""
    index += 1
    while index < len(data) and (data[index] & 0xC0) == 0x80:
        index += 1
    return index


@settings(max_examples=120, deadline=None)
@given(data=line_documents(), choice=st.data())
def test_line_ranges_page_on_line_boundaries(data: bytes, choice: st.DataObject) -> None:
    lines = split_lines(data)
    total = len(lines)
    start = choice.draw(st.integers(1, total), label="start_line")
    end = choice.draw(st.one_of(st.integers(start, total), st.just(0)), label="end_line")
    last = end or total
    expected = b"".join(lines[start - 1 : last])
    limit = sum(len(line) for line in lines[:last])  # byte just past line `last`

    with fresh_store() as (_, store):
        store.upsert(GLOBAL, "lines.md", data, "absent")
        pages, begins = read_pages(store, "lines.md", data, start_line=start, end_line=end)

    assert b"".join(page["content"].encode("utf-8") for page in pages) == expected
    assert pages[0]["start_line"] == start
    assert pages[-1]["end_line"] == last
    for page, begin in zip(pages, begins, strict=True):
        content = page["content"].encode("utf-8")
        stop = begin + len(content)
        assert page["start_line"] == line_of(data, begin)
        assert page["end_line"] == line_of(data, stop - 1)
        if not page["truncated"]:
            continue
        line_end = data.find(b"\n", begin, limit)
        line_end = limit if line_end < 0 else line_end + 1
        if not content.endswith(b"\n"):
            # Not on a line boundary: allowed only for part of one line too big to fit.
            assert b"\n" not in content, "a page may end mid-line only inside one line"
            assert page_size_with(page, data[begin:line_end]) > BUDGET - SLACK, (
                "page ended mid-line although the rest of that line would have fit"
            )
            following = data[begin : next_char_end(data, stop)]
        else:
            after = data.find(b"\n", stop, limit)
            following = data[begin : limit if after < 0 else after + 1]
        # The page is reasonably full: one more line (or character) would not have fit.
        assert page_size_with(page, following) > BUDGET - SLACK, "page ended early"


# ---------------------------------------------------------------------------------
# 4. and 5. Search
# ---------------------------------------------------------------------------------

ENGLISH = ["deploy", "release", "python", "hub", "memory", "search", "token", "amux",
           "config", "notes", "alpha", "straße", "café", "md", "x"]
CHINESE = ["部署", "发布", "记忆", "搜索", "配置", "笔记", "计划", "中文", "测试", "记"]
DIRS = ["projects", "amux", "amuxer", "amux-old", "notes", "Notes", "笔记", "a"]
FILES = ["x.md", "y.md", "amux.md", "deploy.md", "计划.md", "Notes.md", "a.md", "Hub.md"]
TRAP_PATHS = [
    "projects/amux/x.md", "projects/amuxer/x.md", "projects/amux-old/y.md", "projects/amux.md",
    "projects/amux/deep/y.md", "projects/amuxer/amux.md", "projects/amux/笔记/计划.md",
    "projects/amux0/x.md",
]
VOCABULARY = ENGLISH + CHINESE + DIRS + [name[:-3] for name in FILES]
random_word_chars = st.characters(
    codec="utf-8", categories=("L", "N"), exclude_characters="#-"
) | st.sampled_from(list("abcdeXYZ.:_/部署记"))


def random_case(word: str, style: int) -> str:
    """`style` -2: upper, -1: title, otherwise a bit mask of characters to swap case."""
    if style == -2:
        return word.upper()  # straße -> STRASSE: a Unicode case mapping must NOT match
    if style == -1:
        return word.title()
    return "".join(c.swapcase() if style >> i & 1 else c for i, c in enumerate(word))


def cased(vocabulary: list[str]) -> st.SearchStrategy[str]:
    return st.builds(random_case, st.sampled_from(vocabulary), st.integers(-2, 255))


tokens = st.one_of(
    cased(ENGLISH), cased(ENGLISH), st.sampled_from(CHINESE), cased(DIRS),
    st.text(random_word_chars, min_size=1, max_size=5),
)


@st.composite
def words(draw: st.DrawFn, max_size: int = 6) -> str:
    items = draw(st.lists(tokens, min_size=1, max_size=max_size))
    glue = draw(st.sampled_from([" ", " ", "", "\t", "，"]))  # "" runs words together
    return glue.join(items)


@st.composite
def body_lines(draw: st.DrawFn) -> str:
    kind = draw(st.sampled_from(["text", "text", "text", "heading", "blank", "long", "odd"]))
    if kind == "heading":
        level = draw(st.integers(1, 7))  # 7 hashes is not a heading
        return "#" * level + " " + draw(words())
    if kind == "blank":
        return ""
    if kind == "long":  # longer than a snippet: hits must be cut
        filler = draw(st.sampled_from(["lorem ", "中文字", "é", "x"]))
        before = draw(st.integers(30, 120))
        after = draw(st.one_of(st.integers(0, 3), st.integers(0, 120)))  # match near the end
        return filler * before + draw(words()) + filler * after
    if kind == "odd":  # look like title syntax but are not
        return draw(st.sampled_from(["#", "name: ", "#nospace", "####### "])) + draw(words())
    return draw(words())


general_paths = st.builds(
    lambda dirs, name: "/".join([*dirs, name]),
    st.lists(st.sampled_from(DIRS), max_size=3),
    st.sampled_from(FILES),
)
corpus_paths = st.one_of(general_paths, general_paths, st.sampled_from(TRAP_PATHS))


@st.composite
def corpora(draw: st.DrawFn, min_size: int = 5, max_size: int = 40) -> dict[str, bytes]:
    """Documents assembled from a shared pool of lines (so they share vocabulary)."""
    pool = draw(st.lists(body_lines(), min_size=1, max_size=16))
    names = draw(st.lists(words(max_size=3), min_size=1, max_size=4))
    paths = draw(st.lists(corpus_paths, min_size=min_size, max_size=max_size, unique=True))
    corpus = {}
    for path in paths:
        lines = []
        name = draw(st.integers(-1, len(names) - 1))
        if name >= 0:  # front matter: `name:` is part of the title, `description:` is not
            lines += ["---", "name: " + names[name], "description: " + names[-1 - name],
                      "metadata:", "  type: project", "---"]
        lines += [pool[i] for i in draw(st.lists(st.integers(0, len(pool) - 1), max_size=10))]
        newline = draw(st.sampled_from(["\n", "\n", "\r\n"]))
        text = newline.join(lines) + draw(st.sampled_from(["", newline]))
        corpus[path] = text.encode("utf-8")
    return corpus


query_terms = st.one_of(
    cased(VOCABULARY),
    cased(VOCABULARY),
    st.builds(lambda word, i, j: word[min(i, j): max(i, j) + 1], st.sampled_from(VOCABULARY),
              st.integers(0, 8), st.integers(0, 8)).filter(bool),
    st.sampled_from([".md", "/", "-", "x.md", "amux/", "ñ", "#", "name:", "，", "STRASSE"]),
    st.text(random_word_chars, min_size=1, max_size=5),
).filter(lambda term: term.split() == [term])
SEPARATORS = [" ", "  ", "\t", "\u3000", "\n", "\u00a0", "\u2003", " \u3000 "]


def corpus_words(corpus: dict[str, bytes]) -> list[str]:
    """Whitespace-separated words of the corpus (at most 12 characters each)."""
    found = {word[:12] for data in corpus.values() for word in data.decode("utf-8").split()}
    return sorted(found)


@st.composite
def queries(draw: st.DrawFn, corpus: dict[str, bytes] | None = None) -> tuple[str, list[str]]:
    """A query string and the terms a correct Unicode-whitespace split must find.

    Terms come from the generators' vocabulary, from the corpus itself (random case)
    and from nowhere in particular.
    """
    term = query_terms
    if corpus:
        term = st.one_of(query_terms, cased(corpus_words(corpus)))
    terms = draw(st.lists(term, min_size=1, max_size=5))
    text = draw(st.sampled_from(["", " ", "\u3000"]))
    for term in terms:
        text += term + draw(st.sampled_from(SEPARATORS))
    return text, terms


@dataclass
class RefResult:
    path: str
    matched_terms: list[str]
    path_hit: bool
    hit_lines: list[int]
    rank: tuple[bool, int, int, bytes]


def reference_title(data: bytes) -> list[bytes]:
    """Folded front-matter `name:` value and first ATX heading (Markdown) text."""
    lines = [line.removesuffix(b"\r") for line in data.split(b"\n")]
    parts: list[bytes] = []
    body = 0
    if lines and lines[0] == b"---":
        for close in range(1, len(lines)):
            if lines[close] == b"---":
                for field in lines[1:close]:
                    if field.startswith(b"name:"):
                        parts.append(field[len(b"name:"):].strip())
                        break
                body = close + 1
                break
    for line in lines[body:]:
        heading = re.match(rb"#{1,6}(?=[ \t]|$)", line)
        if heading:
            parts.append(line[heading.end():].strip())
            break
    return [part.lower() for part in parts]


def reference_search(
    corpus: dict[str, bytes], terms: list[str], prefix: str | None = None
) -> tuple[list[RefResult], int]:
    """Brute force SPEC §3 / Appendix A; returns ranked candidates and files in scope.
    Documents matched by their path alone rank after every one with a hit line
    (docs/store.md "Search", issue 37)."""
    keys: list[bytes] = []
    shown: list[str] = []
    for term in terms:  # distinct after ASCII folding, first spelling kept
        key = term.encode("utf-8").lower()
        if key not in keys:
            keys.append(key)
            shown.append(term)
    if prefix:
        prefix = prefix.removesuffix("/")
    in_scope = {
        path: data for path, data in corpus.items()
        if not prefix or path == prefix or path.startswith(prefix + "/")
    }
    results = []
    for path, data in in_scope.items():
        content = data.lower()
        folded_path = path.encode("utf-8").lower()
        title = reference_title(data)
        in_content = [i for i, key in enumerate(keys) if key in content]
        in_path = [i for i, key in enumerate(keys) if key in folded_path]
        matched = sorted(set(in_content) | set(in_path))
        if not matched:
            continue
        titled = [
            i for i in matched if i in in_path or any(keys[i] in part for part in title)
        ]
        content_keys = [keys[i] for i in in_content]
        hit_lines = [
            number for number, line in enumerate(content.split(b"\n"), 1)
            if any(key in line for key in content_keys)
        ]
        results.append(RefResult(
            path, [shown[i] for i in matched], bool(in_path), hit_lines,
            (not hit_lines, -len(matched), -len(titled), path.encode("utf-8")),
        ))
    results.sort(key=lambda result: result.rank)
    return results, len(in_scope)


def record(label: str) -> None:
    """A Hypothesis statistics `event`, ignored outside a `@given` test."""
    with contextlib.suppress(HypothesisInvalidArgument):
        event(label)


def check_search(
    store: Store, corpus: dict[str, bytes], query: str, terms: list[str],
    limit: int | None, prefix: str | None = None,
) -> None:
    response = store.search(GLOBAL, query, path_prefix=prefix, limit=limit)
    reference, in_scope = reference_search(corpus, terms, prefix)
    expected = reference[: limit or 5]

    assert len(compact(response)) <= BUDGET
    assert response["incomplete"] is False
    assert response["scanned_files"] == in_scope
    assert [r["path"] for r in response["results"]] == [r.path for r in expected]
    for first, second in itertools.pairwise(expected):
        if first.rank[:2] == second.rank[:2] and first.rank[2] != second.rank[2]:
            record("search: path/title count decided an order")
        if first.rank[0] != second.rank[0] and first.rank[1] > second.rank[1]:
            record("search: a hit line outranked more terms in a path")
    for got, want in zip(response["results"], expected, strict=True):
        data = corpus[want.path]
        assert got["revision"] == sha(data)
        assert got["matched_terms"] == want.matched_terms, want.path
        assert got["path_hit"] is want.path_hit, want.path
        hits = got["hits"]
        assert len(hits) <= HITS_MAX
        if want.path_hit and not want.hit_lines:
            record("search: result matched by its path only")
        # The FIRST matching lines in file order (fewer only when the budget cut them).
        assert [hit["line"] for hit in hits] == want.hit_lines[: len(hits)], want.path
        if len(hits) < min(HITS_MAX, len(want.hit_lines)):
            record("search: hits cut by the response budget")
            assert response["truncated"] is True
            # Only the budget may cut hits: one more hit (< 600 bytes here) would not fit.
            assert len(compact(response)) > BUDGET - 600
        if len(want.hit_lines) > HITS_MAX:
            assert response["truncated"] is True
        raw_lines = data.split(b"\n")
        for hit in hits:
            snippet = hit["snippet"].encode("utf-8")
            line = raw_lines[hit["line"] - 1]
            visible = line.removesuffix(b"\r")
            assert len(snippet) <= SNIPPET_MAX
            assert snippet in line
            if hit["truncated"]:
                record("search: snippet cut")
                assert len(visible) > SNIPPET_MAX
                assert any(
                    term.encode("utf-8").lower() in snippet.lower() for term in want.matched_terms
                ), "a cut snippet should still show a match"
            else:
                assert snippet in (visible, line)


def populate(store: Store, corpus: dict[str, bytes]) -> None:
    for path, data in corpus.items():
        store.upsert(GLOBAL, path, data, "absent")


limits = st.one_of(st.just(20), st.integers(1, 20), st.none())


@settings(max_examples=60, deadline=None)
@given(
    corpus=st.one_of(corpora(max_size=20), corpora(min_size=21, max_size=40)),
    choice=st.data(),
)
def test_search_matches_brute_force_reference(
    corpus: dict[str, bytes], choice: st.DataObject
) -> None:
    # Everything is drawn before the store runs, so generation never depends on it.
    searches = choice.draw(st.lists(st.tuples(queries(corpus), limits), min_size=1, max_size=4),
                           label="searches")
    with fresh_store() as (_, store):
        populate(store, corpus)
        for (query, terms), limit in searches:
            check_search(store, corpus, query, terms, limit)
        # Every document is reachable through its path alone (`.md` is in every path).
        response = store.search(GLOBAL, "zzzznotthere .MD", limit=20)
        assert response["scanned_files"] == len(corpus)
        assert len(response["results"]) == min(20, len(corpus))


@settings(max_examples=60, deadline=None)
@given(
    before=st.builds(str.__add__, st.text(st.sampled_from(["中", "é", "x", " "]), max_size=4),
                     st.builds(str.__mul__, st.sampled_from(["中", "é", "x", "😀"]),
                               st.integers(0, 130))),
    term=st.sampled_from(["ab", "deploy", "部署", "x部"]),
    after=st.builds(str.__mul__, st.sampled_from(["中", "é", "y", " ", "😀"]),
                    st.one_of(st.integers(0, 3), st.integers(0, 130))),
)
@example(before="中" * 100, term="ab", after="")
def test_cut_snippet_shows_the_match(before: str, term: str, after: str) -> None:
    """A hit on a long line keeps the first match inside its 240-byte snippet."""
    line = before + term + after
    with fresh_store() as (_, store):
        store.upsert(GLOBAL, "long.md", line + "\n", "absent")
        (result,) = store.search(GLOBAL, term)["results"]
    (hit,) = result["hits"]
    snippet = hit["snippet"]
    assert len(snippet.encode("utf-8")) <= SNIPPET_MAX
    assert snippet in line
    assert hit["truncated"] is (len(line.encode("utf-8")) > SNIPPET_MAX)
    assert term in snippet, f"snippet {snippet!r} lost the match {term!r}"


TITLE_TERMS = ["deploy", "release", "部署", "token", "alpha"]
PLACES = ["absent", "name", "description", "front-matter comment", "first heading",
          "second heading", "seven hashes", "no space", "name line in body", "body"]


@st.composite
def title_corpora(draw: st.DrawFn) -> tuple[dict[str, bytes], list[str]]:
    """Documents that all hold the query terms, each term in a different kind of place.

    Only `name:` in the front matter and the first heading are title; look-alikes
    (description, a `#` comment in the front matter, a second heading, `#######`,
    `#word`, a `name:` line in the body) are not. Paths never contain the terms, so
    the order of equally matched documents is decided by the title alone.
    """
    terms = draw(st.lists(st.sampled_from(TITLE_TERMS), min_size=1, max_size=3, unique=True))
    count = draw(st.integers(2, 8))
    corpus = {}
    for number in range(count):
        placed = [(draw(st.sampled_from(PLACES)), random_case(term, draw(st.integers(-2, 255))))
                  for term in terms]

        def at(place: str, placed: list[tuple[str, str]] = placed) -> list[str]:
            return [word for where, word in placed if where == place]

        front = at("name") + at("description") + at("front-matter comment")
        lines = []
        if front or draw(st.booleans()):
            lines += ["---", " ".join(["name:", "intro", *at("name")]),
                      " ".join(["description:", "about", *at("description")]),
                      *("# " + word for word in at("front-matter comment")), "---"]
        lines += ["####### " + word for word in at("seven hashes")]
        lines += ["#" + word for word in at("no space")]
        lines += ["name: " + word for word in at("name line in body")]
        lines.append(" ".join(["#", "intro", *at("first heading")]))
        lines += ["text " + word for word in at("body")]
        lines.append(" ".join(["##", "more", *at("second heading")]))
        newline = draw(st.sampled_from(["\n", "\r\n"]))
        corpus[f"t/doc{number}.md"] = (newline.join(lines) + newline).encode("utf-8")
    return corpus, [random_case(term, draw(st.integers(-2, 255))) for term in terms]


def shifted(data: bytes) -> bytes:
    """Same size, other bytes: every ASCII letter moved one place (z wraps to a)."""
    table = bytes.maketrans(
        b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ",
        b"bcdefghijklmnopqrstuvwxyzaBCDEFGHIJKLMNOPQRSTUVWXYZA",
    )
    return data.translate(table)


@st.composite
def changes(draw: st.DrawFn, corpus: dict[str, bytes]) -> list[tuple[str, str, bytes]]:
    """Writes through the store and behind its back (an editor, `rm`, a restore)."""
    contents = [*sorted(set(corpus.values())), b"", "amux deploy 部署\n".encode()]
    known = sorted(corpus)
    op = st.one_of(
        st.tuples(st.just("upsert"), st.sampled_from(known) | corpus_paths,
                  st.sampled_from(contents)),
        st.tuples(st.just("forget"), st.sampled_from(known), st.just(b"")),
        st.tuples(st.just("edit in place, same size"), st.sampled_from(known), st.just(b"")),
        st.tuples(st.just("edit in place"), st.sampled_from(known), st.sampled_from(contents)),
        st.tuples(st.just("delete offline"), st.sampled_from(known), st.just(b"")),
        st.tuples(st.just("create offline"), corpus_paths, st.sampled_from(contents)),
    )
    return draw(st.lists(op, min_size=1, max_size=8))


def apply_change(
    store: Store, base: Path, model: dict[str, bytes], change: tuple[str, str, bytes]
) -> None:
    kind, path, content = change
    file = base / "memory" / "global" / Path(*path.split("/"))
    current = model.get(path)
    if kind == "upsert":
        store.upsert(GLOBAL, path, content, "absent" if current is None else sha(current))
        model[path] = content
    elif current is None:
        if kind == "create offline":
            file.parent.mkdir(parents=True, exist_ok=True)
            file.write_bytes(content)
            model[path] = content
    elif kind == "forget":
        store.forget(GLOBAL, path, sha(current))
        del model[path]
    elif kind == "delete offline":
        file.unlink()
        del model[path]
    elif kind.startswith("edit in place") or kind == "create offline":
        new = shifted(current) if kind == "edit in place, same size" else content
        with open(file, "r+b") as handle:  # same inode, as an editor saving in place
            handle.write(new)
            handle.truncate()
        model[path] = new


@settings(max_examples=6, deadline=None)
@given(corpus=corpora(max_size=15), choice=st.data())
def test_search_sees_every_change_after_a_warm_cache(
    corpus: dict[str, bytes], choice: st.DataObject
) -> None:
    """Searches that warmed the store's caches never hide a later change on disk."""
    edits = choice.draw(changes(corpus), label="changes")
    searches = choice.draw(st.lists(queries(corpus), min_size=1, max_size=3), label="queries")
    searches.append((".md", [".md"]))  # every document, by path
    model = dict(corpus)
    with fresh_store() as (base, store):
        populate(store, corpus)
        # Longer than the store waits (1 s) before it trusts a file's stat key, so the
        # searches below really cache documents and directory listings.
        time.sleep(1.2)
        for query, terms in searches:
            check_search(store, model, query, terms, 20)
        for edit in edits:
            apply_change(store, base, model, edit)
        for query, terms in searches:
            check_search(store, model, query, terms, 20)


@settings(max_examples=80, deadline=None)
@given(case=title_corpora())
def test_search_title_breaks_ties(case: tuple[dict[str, bytes], list[str]]) -> None:
    corpus, terms = case
    with fresh_store() as (_, store):
        populate(store, corpus)
        check_search(store, corpus, " ".join(terms), terms, 20)


def test_path_only_match_is_a_result() -> None:
    corpus = {
        "projects/amux/x.md": b"# Deploy notes\nnothing relevant here\n",
        "notes/deploy.md": b"a line\n",
        "notes/other.md": b"Deploy on Friday\n",
    }
    with fresh_store() as (_, store):
        populate(store, corpus)
        check_search(store, corpus, "AMUX deploy", ["AMUX", "deploy"], 20)
        response = store.search(GLOBAL, "amux", limit=20)
        assert response["results"] == [{
            "path": "projects/amux/x.md", "revision": sha(corpus["projects/amux/x.md"]),
            "matched_terms": ["amux"], "path_hit": True, "hits": [],
        }]


@st.composite
def prefixes(draw: st.DrawFn, corpus: dict[str, bytes]) -> str:
    dirs = sorted({"/".join(path.split("/")[:depth])
                   for path in corpus for depth in range(1, path.count("/") + 1)})
    existing = dirs + sorted(corpus)
    traps = [d + suffix for d in dirs for suffix in ("er", "-old", "0", ".md")] + [
        d[:-1] for d in dirs if len(d) > 1 and d[-2] != "/"  # cut inside the last segment
    ]
    fixed = ["projects/amux", "projects/amuxer", "projects/amux-old", "projects", "notes",
             "Notes", "笔记", "zzz", "projects/amux.md", "projects/zzz", "projects/amu"]
    prefix = draw(st.sampled_from(existing) | st.sampled_from(traps or fixed)
                  | st.sampled_from(fixed))
    return prefix + draw(st.sampled_from(["", "/"]))


@settings(max_examples=60, deadline=None)
@given(corpus=corpora(max_size=30), choice=st.data())
def test_prefix_restricts_to_whole_segments(
    corpus: dict[str, bytes], choice: st.DataObject
) -> None:
    searches = choice.draw(
        st.lists(st.tuples(prefixes(corpus), queries(corpus), limits), min_size=4, max_size=4),
        label="searches",
    )
    with fresh_store() as (_, store):
        populate(store, corpus)
        for prefix, (query, terms), limit in searches:
            check_search(store, corpus, query, terms, limit, prefix)
            # `.md` is in every path: the results are the whole (bounded) prefix listing.
            check_search(store, corpus, ".md", [".md"], 20, prefix)


@settings(max_examples=20, deadline=None)
@given(
    paths=st.lists(corpus_paths, min_size=1, max_size=4, unique=True),
    tail=st.sampled_from(["x", "x.md", "a/b", "x/"]),
)
@example(paths=["projects/amux.md"], tail="x")
def test_prefix_below_a_document_matches_nothing(paths: list[str], tail: str) -> None:
    """A prefix that continues past a document's name names nothing: no results, no error.

    Lexically it is a valid prefix, and like any other prefix that names no directory
    it covers no document (SPEC Appendix A: `path_prefix` matches whole segments).
    """
    corpus = {path: b"note\n" for path in paths}
    document = paths[-1]
    with fresh_store() as (_, store):
        populate(store, corpus)
        check_search(store, corpus, ".md", [".md"], 20, f"{document}/{tail}")
