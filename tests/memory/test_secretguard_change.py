"""The incremental scan (`scan_change`) finds exactly what a full scan of the new text
finds, for any edit of a text the guard found nothing in; the store scans in full when
the document on disk is not what it last wrote (a hand edit can bring a secret in)."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from amux.errors import SecretDetected
from amux.memory import GLOBAL, Store
from amux.memory.revision import revision_of
from amux.memory.secretguard import CHANGE_SCAN_FROM, changed_lines, scan, scan_change
from tests.memory.corpora import notes, secret_cases

CLEAN_LINES = [line for text in notes().values() for line in text.splitlines()]
SECRET_TEXTS = [text.strip("\n") for _rule, text in secret_cases()]
LINE = st.one_of(st.sampled_from(CLEAN_LINES), st.text(max_size=60).map(
    lambda t: t.replace("\n", " ").replace("\r", " ")))
NEW_LINE = st.one_of(LINE, st.sampled_from(SECRET_TEXTS))
NAMES = ["password", "api_token", "DB_PASS", "secret_key", "auth", "密码", "token"]
RANDOM = st.text(st.sampled_from("ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789"),
                 min_size=16, max_size=40)


@st.composite
def edits(draw: st.DrawFn) -> tuple[str, str]:
    """(old, new): a clean text and an edit of it (lines replaced, inserted, deleted,
    possibly bringing secrets of the corpus, possibly splitting or joining lines)."""
    assignment = st.builds(lambda name, op: f"{name}{op}changeme", st.sampled_from(NAMES),
                           st.sampled_from([" = ", ": ", "=", " := "]))
    old_lines = draw(st.lists(st.one_of(LINE, assignment), max_size=40))
    old = "\n".join(old_lines) + draw(st.sampled_from(["", "\n"]))
    if scan(old):
        old = ""
    lines = old.split("\n")
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(0, len(lines)))
        how = draw(st.sampled_from(["insert", "replace", "delete", "join", "append",
                                    "value", "value"]))
        if how == "insert":
            lines[at:at] = [draw(NEW_LINE)]
        elif how == "replace" and at < len(lines):
            lines[at] = draw(NEW_LINE)
        elif how == "delete" and at < len(lines):
            del lines[at]
        elif how == "join" and at + 1 < len(lines):
            lines[at:at + 2] = [lines[at] + draw(st.sampled_from(["", " ", "="])) + lines[at + 1]]
        elif how == "value" and at < len(lines) and "changeme" in lines[at]:
            # a value typed in place, maybe ending as the old one did (a common suffix)
            value = draw(RANDOM) + draw(st.sampled_from(["", "e", "me", "geme"]))
            lines[at] = lines[at].replace("changeme", value)
        elif how == "append" and at < len(lines):
            lines[at] += draw(st.sampled_from([*SECRET_TEXTS, "x", " token = ", "="]))
    return old, "\n".join(lines)


@settings(max_examples=600, deadline=None)
@given(edits())
def test_a_change_scan_finds_what_a_full_scan_finds(edit: tuple[str, str]) -> None:
    old, new = (text.encode("utf-8", "surrogatepass") for text in edit)
    assert scan_change(old, new, from_size=0) == scan(new)  # always the change scan


def test_a_one_line_edit_of_a_large_note_reads_a_few_lines() -> None:
    old = b"".join(b"line %d of a long note about the build\n" % n for n in range(1500))
    new = old + b"one more line\n"
    start, end = changed_lines(old, new) or (0, len(new))
    assert end - start < 200 and new[start:end].endswith(b"one more line\n")
    assert changed_lines(old, b"-----BEGIN RSA PRIVATE KEY-----\n" + new) is None


def test_a_hand_edited_secret_still_blocks_updates_of_that_document(
        store: Store, memory_root: Path) -> None:
    """The store wrote the note and found nothing; someone then pastes a token into the
    file by hand. An update elsewhere in the note, at the revision on disk, is scanned in
    full and refused, as before incremental scans."""
    body = "".join(f"- item {n}\n" for n in range(600))
    assert len(body) >= CHANGE_SCAN_FROM  # the size at which only changes are read
    store.upsert(GLOBAL, "notes/long.md", body, "absent")
    path = memory_root / "global" / "notes" / "long.md"
    token = "ghp_" + "Zq8vR2mXk9Lp4Wn7tYb3" * 2
    edited = f"bot token: {token[:40]}\n" + body
    path.write_text(edited)
    update = edited + "- one more\n"
    try:
        store.upsert(GLOBAL, "notes/long.md", update, revision_of(edited.encode()))
    except SecretDetected as refused:
        assert refused.line == 1
    else:
        raise AssertionError("the hand-edited token was not found")
    clean = body + "- one more\n"  # the token taken out again: accepted
    store.upsert(GLOBAL, "notes/long.md", clean, revision_of(edited.encode()))
    assert store.get(GLOBAL, "notes/long.md")["content"] == clean
