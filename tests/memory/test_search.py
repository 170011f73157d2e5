"""search (SPEC §3, Appendix A): literal terms, folding, ranking, hits, budgets, prefix."""

from __future__ import annotations

import itertools
import subprocess
from pathlib import Path

import pytest

from amux.encoding import encode
from amux.errors import InvalidArgument
from amux.memory import Scope, Store
from amux.memory.limits import MIB
from amux.memory.revision import ABSENT, revision_of


def _write(root: Path, files: dict[str, str | bytes]) -> None:
    for name, content in files.items():
        target = root / "global" / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content.encode() if isinstance(content, str) else content)


def _paths(response: dict[str, object]) -> list[str]:
    return [r["path"] for r in response["results"]]  # type: ignore[attr-defined]


# -- query and limit validation --------------------------------------------------


@pytest.mark.parametrize(
    "query",
    ["", "   ", "\u3000", "a " * 17, "x" * 513, "é" * 257],
)
def test_bad_queries_are_refused(store: Store, scope: Scope, query: str) -> None:
    with pytest.raises(InvalidArgument):
        store.search(scope, query)


def test_query_limits_at_the_boundary(store: Store, scope: Scope) -> None:
    store.search(scope, " ".join(f"t{i}" for i in range(16)))
    store.search(scope, "x" * 512)
    store.search(scope, "é" * 256)


@pytest.mark.parametrize("limit", [0, 21, -1, True, "5", 2.0])
def test_bad_limits_are_refused(store: Store, scope: Scope, limit: object) -> None:
    with pytest.raises(InvalidArgument):
        store.search(scope, "x", limit=limit)


def test_limit_default_and_range(memory_root: Path, store: Store, scope: Scope) -> None:
    _write(memory_root, {f"d{i:02}.md": "common" for i in range(25)})
    assert len(store.search(scope, "common")["results"]) == 5
    assert len(store.search(scope, "common", limit=1)["results"]) == 1
    many = store.search(scope, "common", limit=20)
    assert len(many["results"]) == 20 and many["truncated"] is True


def test_empty_or_missing_scope(store: Store, scope: Scope) -> None:
    assert store.search(scope, "anything") == {
        "results": [], "scanned_files": 0, "incomplete": False, "truncated": False,
    }


# -- matching --------------------------------------------------------------------


def test_ascii_folds_and_other_characters_compare_exactly(
    memory_root: Path, store: Store, scope: Scope
) -> None:
    _write(memory_root, {"a.md": "Use PyTest here\n", "b.md": "ÉCOLE\n", "c.md": "école\n"})
    assert _paths(store.search(scope, "pytest")) == ["a.md"]
    assert _paths(store.search(scope, "PYTEST")) == ["a.md"]
    assert _paths(store.search(scope, "école")) == ["c.md"]  # É is not ASCII: no folding


def test_cjk_is_matched_as_contiguous_text(memory_root: Path, store: Store, scope: Scope) -> None:
    _write(memory_root, {"zh.md": "我们使用记忆系统保存偏好。\n"})
    assert _paths(store.search(scope, "记忆")) == ["zh.md"]
    assert _paths(store.search(scope, "忆系统")) == ["zh.md"]
    assert _paths(store.search(scope, "记系")) == []


def test_terms_split_on_unicode_whitespace(memory_root: Path, store: Store, scope: Scope) -> None:
    _write(memory_root, {"a.md": "记忆 only\n", "b.md": "偏好 only\n"})
    result = store.search(scope, "记忆\u3000偏好")
    assert sorted(_paths(result)) == ["a.md", "b.md"]


def test_literal_terms_have_no_regex_or_glob_meaning(
    memory_root: Path, store: Store, scope: Scope
) -> None:
    _write(memory_root, {"a.md": "a.c and a*c\n", "b.md": "abc\n"})
    assert _paths(store.search(scope, "a.c")) == ["a.md"]
    assert _paths(store.search(scope, "a*c")) == ["a.md"]
    assert _paths(store.search(scope, ".*")) == []


def test_path_only_matches_are_candidates(memory_root: Path, store: Store, scope: Scope) -> None:
    _write(memory_root, {"projects/deploy/notes.md": "nothing relevant\n"})
    result = store.search(scope, "DEPLOY")
    assert result["results"] == [{
        "path": "projects/deploy/notes.md",
        "revision": revision_of(b"nothing relevant\n"),
        "matched_terms": ["DEPLOY"],
        "path_hit": True,
        "hits": [],
    }]


def test_ranking(memory_root: Path, store: Store, scope: Scope) -> None:
    _write(memory_root, {
        "z-both.md": "alpha beta\n",                       # 2 terms, none in title/path
        "a-one.md": "alpha\n",                             # 1 term
        "m-title.md": "# Beta notes\nalpha\n",             # 2 terms, 1 in title
        "alpha/b.md": "beta\n",                            # 2 terms, 1 in path
        "n-name.md": "---\nname: alpha beta\n---\nx\n",    # 2 terms, 2 in title (name:)
        "b-one.md": "beta\n",                              # 1 term
    })
    result = store.search(scope, "alpha beta", limit=20)
    assert _paths(result) == [
        "n-name.md", "alpha/b.md", "m-title.md", "z-both.md", "a-one.md", "b-one.md",
    ]
    assert result["results"][1]["path_hit"] is True
    assert result["results"][0]["matched_terms"] == ["alpha", "beta"]


def test_a_path_alone_ranks_below_every_hit_line(
        memory_root: Path, store: Store, scope: Scope) -> None:
    """A project's folder name is in every path of it: `hub` returned every
    `projects/github.com-acme-hub/…` document with no line hit, and the one note that
    says "hub" was left out. A path still counts among documents with a hit, and
    orders the path-only ones."""
    _write(memory_root, {
        **{f"projects/github.com-acme-hub/{name}.md": "nothing relevant\n"
           for name in ("ci", "decisions", "deploy", "people", "style", "tests")},
        "notes/hub-restart.md": "nothing relevant\n",          # both terms, its path alone
        "notes/ports.md": "the Hub listens on 8080\n",         # one term, a line
        "projects/github.com-acme-hub/restart.md": "restart by hand\n",  # two, one a line
    })
    result = store.search(scope, "hub restart", limit=5)
    assert _paths(result) == [
        "projects/github.com-acme-hub/restart.md", "notes/ports.md", "notes/hub-restart.md",
        "projects/github.com-acme-hub/ci.md", "projects/github.com-acme-hub/decisions.md"]
    assert [bool(r["hits"]) for r in result["results"]] == [True, True, False, False, False]
    assert result["truncated"] is True


def test_duplicate_terms_count_once(memory_root: Path, store: Store, scope: Scope) -> None:
    _write(memory_root, {"a.md": "foo\n"})
    assert store.search(scope, "foo FOO foo")["results"][0]["matched_terms"] == ["foo"]


# -- hits and snippets -------------------------------------------------------------


def test_at_most_three_hits_the_first_matching_lines(
    memory_root: Path, store: Store, scope: Scope
) -> None:
    _write(memory_root, {"a.md": "x\nkey one\ny\nKEY two\nkey three\nkey four\n"})
    result = store.search(scope, "key")
    hits = result["results"][0]["hits"]
    assert [(h["line"], h["snippet"]) for h in hits] == [
        (2, "key one"), (4, "KEY two"), (5, "key three"),
    ]
    assert result["truncated"] is True  # the fourth matching line was omitted


def test_three_hits_exactly_is_not_truncated(memory_root: Path, store: Store, scope: Scope) -> None:
    _write(memory_root, {"a.md": "key 1\nkey 2\nkey 3\n"})
    result = store.search(scope, "key")
    assert len(result["results"][0]["hits"]) == 3
    assert result["truncated"] is False


def test_snippets_are_cut_to_240_bytes_on_character_boundaries(
    memory_root: Path, store: Store, scope: Scope
) -> None:
    exact = "k" + "x" * 239
    long_line = "记" * 200 + "needle" + "忆" * 200
    _write(memory_root, {"a.md": exact + "\n", "b.md": long_line + "\n"})
    at_limit = store.search(scope, "kxx")["results"][0]["hits"][0]
    assert at_limit == {"line": 1, "snippet": exact, "truncated": False}
    cut = store.search(scope, "needle")["results"][0]["hits"][0]
    assert cut["truncated"] is True
    assert "needle" in cut["snippet"]
    assert len(cut["snippet"].encode()) <= 240
    assert cut["snippet"] in long_line


def test_response_fits_8_kib(memory_root: Path, store: Store, scope: Scope) -> None:
    line = "match " + "w" * 230 + "\n"
    _write(memory_root, {f"doc{i:02}.md": line * 5 for i in range(20)})
    result = store.search(scope, "match", limit=20)
    assert len(encode(result)) <= 8192
    assert result["truncated"] is True
    assert len(result["results"]) == 20  # hits were dropped, results kept where they fit


# -- budgets -----------------------------------------------------------------------


def stopped() -> float:
    """A clock that never moves: the count budgets alone stop these searches (under
    load the 250 ms budget tripped first: 837 of 1,024 files)."""
    return 0.0


def test_file_budget(memory_root: Path, scope: Scope) -> None:
    _write(memory_root, {f"d{i:04}.md": "t" for i in range(1024)})
    with Store(memory_root, clock=stopped) as store:
        full = store.search(scope, "t")
        assert (full["scanned_files"], full["incomplete"]) == (1024, False)
        _write(memory_root, {"e.md": "t"})
        over = store.search(scope, "t")
        assert (over["scanned_files"], over["incomplete"]) == (1024, True)


def test_byte_budget(memory_root: Path, scope: Scope) -> None:
    chunk = 64 * 1024
    _write(memory_root, {f"d{i:03}.md": b"t" * chunk for i in range(128)})  # exactly 8 MiB
    with Store(memory_root, clock=stopped) as store:
        full = store.search(scope, "t")
        assert (full["scanned_files"], full["incomplete"]) == (128, False)
        _write(memory_root, {"e.md": b"t"})
        over = store.search(scope, "t")
        assert (over["scanned_files"], over["incomplete"]) == (128, True)
    assert 128 * chunk == 8 * MIB


def test_time_budget_with_an_injected_clock(memory_root: Path, scope: Scope) -> None:
    _write(memory_root, {"a-b.md": "t", "a/b.md": "t", "a0.md": "t", "b.md": "t"})
    ticks = itertools.count(0.0, 0.1)
    with Store(memory_root, clock=lambda: next(ticks)) as store:
        result = store.search(scope, "t", limit=20)
    # 0.1 and 0.2 s pass the 250 ms budget, 0.3 s does not: two files, in bytewise order.
    assert sorted(_paths(result)) == ["a-b.md", "a/b.md"]
    assert (result["scanned_files"], result["incomplete"]) == (2, True)


def test_directory_entry_budget(memory_root: Path, scope: Scope) -> None:
    _write(memory_root, {"a.md": "t"})
    folder = memory_root / "global" / "z"
    folder.mkdir()
    for i in range(4094):  # 2 entries at the root (a.md, z) + 4,094 = 4,096
        (folder / f"f{i}.txt").write_bytes(b"")
    with Store(memory_root, clock=stopped) as store:
        assert store.search(scope, "t")["incomplete"] is False
        (folder / "one-more.txt").write_bytes(b"")
        assert store.search(scope, "t")["incomplete"] is True


def test_scan_order_is_bytewise_on_full_paths(memory_root: Path, scope: Scope) -> None:
    names = ["a0.md", "a/b.md", "a-b.md", "B.md", "a/a/z.md", "é.md"]
    _write(memory_root, {name: "t" for name in names})
    for stop_after in range(1, len(names) + 1):
        ticks = itertools.chain([0.0], [0.0] * stop_after, itertools.repeat(1.0))
        with Store(memory_root, clock=ticks.__next__) as store:
            scanned = set(_paths(store.search(scope, "t", limit=20)))
        expected = sorted(names, key=lambda n: n.encode())[:stop_after]
        assert scanned == set(expected)


# -- prefix ------------------------------------------------------------------------


def test_prefix_matches_whole_segments(memory_root: Path, store: Store, scope: Scope) -> None:
    _write(memory_root, {
        "projects/amux/x.md": "t", "projects/amuxer/y.md": "t", "projects/amux.md": "t",
        "other.md": "t",
    })
    for prefix in ("projects/amux", "projects/amux/"):
        assert _paths(store.search(scope, "t", path_prefix=prefix)) == ["projects/amux/x.md"]
    assert _paths(store.search(scope, "t", path_prefix="projects/amux.md")) == [
        "projects/amux.md"
    ]
    assert store.search(scope, "t", path_prefix="missing")["results"] == []


# -- caching and independence -----------------------------------------------------


def test_cache_sees_every_change(memory_root: Path, store: Store, scope: Scope) -> None:
    first = store.upsert(scope, "a.md", "alpha\n", ABSENT)
    assert _paths(store.search(scope, "alpha")) == ["a.md"]
    store.upsert(scope, "a.md", "gamma\n", first["revision"])  # same size
    assert _paths(store.search(scope, "alpha")) == []
    assert _paths(store.search(scope, "gamma")) == ["a.md"]
    (memory_root / "global" / "a.md").write_text("delta\n")  # edited by hand
    assert _paths(store.search(scope, "delta")) == ["a.md"]
    assert store.search(scope, "delta")["results"][0]["revision"] == revision_of(b"delta\n")


def test_search_never_shells_out(
    memory_root: Path, store: Store, scope: Scope, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("search must not start a process")

    monkeypatch.setattr(subprocess, "Popen", refuse)
    monkeypatch.setattr("os.system", refuse)
    monkeypatch.setattr("os.posix_spawn", refuse)
    _write(memory_root, {"a.md": "t"})
    assert _paths(store.search(scope, "t")) == ["a.md"]


def test_information_separators_are_not_whitespace(
    memory_root: Path, store: Store, scope: Scope
) -> None:
    _write(memory_root, {"a.md": "x\x1cy\n", "b.md": "x\n"})
    assert _paths(store.search(scope, "x\x1cy")) == ["a.md"]
    assert store.search(scope, "x\x1cy")["results"][0]["matched_terms"] == ["x\x1cy"]
