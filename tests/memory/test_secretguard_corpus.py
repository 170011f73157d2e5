"""The secret guard against the corpora in fixtures/secrets (counts in docs/store.md).

- `secrets.txt`: real-shaped fake secrets, one per case, each case headed by
  `### <rule id>`: every case must be found (false negatives: 0), under its rule.
- `notes/*.md`: ordinary engineering notes (hashes, UUIDs, revisions, base64,
  URLs, versions, placeholders, code, Chinese): nothing may be found (false
  positives: 0), neither in a whole document nor in any line on its own.

Run with `-s` to see the counts.
"""

from __future__ import annotations

import json

from amux.memory import secretguard
from amux.memory.secretguard import RULES, scan
from tests.memory.corpora import notes, secret_cases


def test_secret_corpus_false_negatives() -> None:
    cases = secret_cases()
    missed = [(rule, text[:40]) for rule, text in cases if not scan(text)]
    misfiled = [(rule, found[0].rule) for rule, text in cases
                if (found := scan(text)) and found[0].rule != rule]
    print(f"\nsecret corpus: {len(cases)} cases, {len({r for r, _t in cases})} rules, "
          f"false negatives {len(missed)}, reported under another rule {len(misfiled)}")
    assert len(cases) >= 40
    assert missed == []
    assert misfiled == []


def test_secret_corpus_covers_every_rule() -> None:
    assert {rule for rule, _text in secret_cases()} == set(RULES)


def test_notes_corpus_false_positives() -> None:
    documents = notes()
    lines = [line for text in documents.values() for line in text.splitlines() if line.strip()]
    whole = [(name, f.line, f.rule) for name, text in documents.items() for f in scan(text)]
    alone = [(line[:60], f.rule) for line in lines for f in scan(line)]
    print(f"\nnotes corpus: {len(documents)} documents, {len(lines)} non-blank lines, "
          f"false positives {len(whole)} (documents), {len(alone)} (lines alone)")
    assert len(lines) >= 60
    assert whole == []
    assert alone == []


def test_no_corpus_secret_reaches_an_error() -> None:
    for _rule, text in secret_cases():
        found = scan(text)
        data = text.encode()
        wire = json.dumps(secretguard.refusal(found).to_wire(), ensure_ascii=False)
        for finding in found:
            value = data[finding.start:finding.end].decode()
            assert value not in wire
