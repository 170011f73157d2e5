"""Revisions as people give them (issue 37): the 12 digits `log --pretty` and `diff` show,
or any unambiguous prefix, wherever the CLI takes one; errors name the option typed."""

from __future__ import annotations

import hashlib
import itertools

from tests.hubproc import HubProcess, amux


def _sharing_a_prefix(digits: int) -> tuple[str, str]:
    """Two texts whose revisions start with the same `digits` hex digits."""
    seen: dict[str, str] = {}
    for number in itertools.count():
        text = f"version {number}\n"
        key = hashlib.sha256(text.encode()).hexdigest()[:digits]
        if key in seen:
            return seen[key], text
        seen[key] = text
    raise AssertionError("unreachable")


def test_every_revision_a_person_types_takes_the_digits_log_shows(
        memory_hub: HubProcess) -> None:
    home = memory_hub.home
    first = amux(home, "memory", "upsert", "MEMORY.md", "--expected-revision", "absent",
                 stdin="- prefer pytest\n")[1]["revision"]
    code, second, err = amux(home, "memory", "upsert", "MEMORY.md", "--expected-revision",
                             first[:12], stdin="- prefer unittest\n")
    assert code == 0, err
    second = second["revision"]
    code, table, _ = amux(home, "memory", "log", "MEMORY.md", "--pretty")
    assert code == 0 and first[:12] in table and second[:12] in table
    code, shown, err = amux(home, "memory", "show", "MEMORY.md", "--revision", first[:12])
    assert (code, shown["revision"], shown["content"]) == (0, first, "- prefer pytest\n"), err
    code, diff, err = amux(home, "memory", "diff", "MEMORY.md", first[:4], second[:8].upper())
    assert code == 0 and "-- prefer pytest\n+- prefer unittest\n" in diff, err
    code, restored, err = amux(home, "memory", "restore", "MEMORY.md", "--revision",
                               first[:12], "--expected-revision", second[:12])
    assert (code, restored["revision"], restored["restored_from"]) == (0, first, first), err
    code, shown, err = amux(home, "memory", "show", "MEMORY.md", "--revision", "@1")
    assert (code, shown["revision"]) == (0, second), err  # counted back: restore, update
    code, out, err = amux(home, "memory", "show", "MEMORY.md", "--revision", "@3")
    assert (code, out["error"]["code"]) == (1, "not_found")
    assert "--revision @3: MEMORY.md has 3 change(s) in history" in err
    code, purged, err = amux(home, "memory", "purge", "MEMORY.md", "--revision", second[:12])
    assert (code, purged["revision"], purged["purged"]) == (0, second, 1), err
    code, gone, err = amux(home, "memory", "forget", "MEMORY.md", "--expected-revision",
                           first[:6])
    assert (code, gone) == (0, {"path": "MEMORY.md", "deleted": True}), err


def test_a_prefix_of_two_versions_lists_both_and_none_says_where_to_look(
        memory_hub: HubProcess) -> None:
    home = memory_hub.home
    one, other = _sharing_a_prefix(4)
    revisions = []
    expected = "absent"
    for text in (one, other):
        expected = amux(home, "memory", "upsert", "notes/a.md", "--expected-revision",
                        expected, stdin=text)[1]["revision"]
        revisions.append(expected)
    prefix = revisions[0][:4]
    code, out, err = amux(home, "memory", "show", "notes/a.md", "--revision", prefix)
    assert (code, out["error"]["code"]) == (2, "invalid_argument")
    assert err.startswith(f"amux memory: invalid_argument: --revision {prefix} is ambiguous: "
                          "2 versions of notes/a.md start with it: ")
    assert revisions[0][:12] in err and revisions[1][:12] in err and "current" in err
    unknown = next(hex(n)[2:].zfill(4) for n in range(65536)
                   if not any(r.startswith(hex(n)[2:].zfill(4)) for r in revisions))
    code, out, err = amux(home, "memory", "restore", "notes/a.md", "--revision",
                          revisions[0], "--expected-revision", unknown)
    assert (code, out["error"]["code"]) == (1, "not_found")
    assert f"--expected-revision {unknown}: no version of notes/a.md" in err
    assert "`amux memory log notes/a.md` lists them" in err


def test_a_revision_that_is_no_revision_is_refused_by_the_option_typed(
        memory_hub: HubProcess) -> None:
    """It was refused with "expected_revision must be …", whatever option was typed."""
    home = memory_hub.home
    amux(home, "memory", "upsert", "a.md", "--expected-revision", "absent", stdin="one\n")
    for args, option in ((("show", "a.md", "--revision", "4f5"), "--revision"),
                         (("forget", "a.md", "--expected-revision", "xyz1"),
                          "--expected-revision"),
                         (("diff", "a.md", "not-a-revision"), "FROM"),
                         (("purge", "a.md", "--revision", "@x"), "--revision")):
        code, out, err = amux(home, "memory", *args)
        assert (code, out["error"]["code"]) == (2, "invalid_argument"), args
        assert f": {option} '{args[-1]}': give a revision" in err, err
        assert "expected_revision" not in err
