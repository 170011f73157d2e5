"""Search terms for the benchmark, chosen from the corpus by measured document frequency.

A query's cost depends on how often its terms occur (frequent terms produce many
candidates to rank; absent ones force a full scan of every document), so terms
are picked by band — frequent, medium, rare, absent; English and Chinese — using
the real document frequency in the generated corpus, not the intended one. The
pick is deterministic: candidates are walked in a seeded order.

Every term is used at most once across all queries, which is what lets the
"warm store, new terms" measurement guarantee that a store has never seen the
terms it is timed on.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import asdict, dataclass

from benchmarks import vocab
from benchmarks.corpus import Vocabulary

SHAPES: dict[str, list[str]] = {
    "1 term": ["en_medium"],
    "3 terms": ["en_frequent", "en_rare", "zh_frequent"],
    "8 terms": ["en_frequent", "en_frequent", "en_medium", "en_medium", "en_rare",
                "zh_frequent", "zh_medium", "zh_rare"],
    "8 terms, 4 absent": ["en_frequent", "zh_frequent", "en_medium", "en_rare",
                          "absent_en", "absent_zh", "absent_en", "absent_en"],
}
"""Query shapes: which band each term comes from. The last one has four terms that
occur in no document (and in no path)."""


@dataclass
class Term:
    text: str
    band: str
    documents: int
    """How many documents contain it (plain substring test, ASCII case folded)."""


@dataclass
class QuerySet:
    shape: str
    terms: list[Term]

    @property
    def query(self) -> str:
        return " ".join(term.text for term in self.terms)

    def to_dict(self) -> dict[str, object]:
        return {"shape": self.shape, "query": self.query,
                "terms": [asdict(term) for term in self.terms]}


class _Band:
    """Lazily measured candidates of one band: document frequency within [low, high]."""

    def __init__(self, picker: TermPicker, name: str, candidates: list[str], low: int,
                 high: int) -> None:
        self.picker = picker
        self.name = name
        self.low = low
        self.high = high
        self._candidates: Iterator[str] = iter(candidates)

    def take(self) -> Term:
        for text in self._candidates:
            if text in self.picker.used:
                continue
            frequency = self.picker.frequency(text)
            if self.low <= frequency <= self.high:
                self.picker.used.add(text)
                return Term(text, self.name, frequency)
        raise RuntimeError(f"term band {self.name!r} ran out of candidates")


class TermPicker:
    """Draws never-reused terms per band from a corpus given as ASCII-folded documents."""

    def __init__(self, folded: list[bytes], paths: list[str], vocabulary: Vocabulary,
                 seed: int) -> None:
        self.folded = folded
        self.folded_paths = [p.encode().lower() for p in paths]
        self.used: set[str] = set()
        self._frequency: dict[str, int] = {}
        rng = random.Random(f"terms-{seed}")
        count = len(folded)

        def shuffled(*groups: list[str]) -> list[str]:
            out: list[str] = []
            for group in groups:  # earlier groups first: real words before identifiers
                chunk = list(group)
                rng.shuffle(chunk)
                out += chunk
            return out

        v = vocabulary
        self.bands = {
            "en_frequent": _Band(self, "en_frequent", shuffled(v.en_tech), count * 30 // 100,
                                 count),
            "en_medium": _Band(self, "en_medium", shuffled(v.en_tech, v.en_tail[:3000]),
                               count * 2 // 100, count * 30 // 100 - 1),
            "en_rare": _Band(self, "en_rare", shuffled(v.en_rare, v.en_tail[3000:12000]), 1, 8),
            "zh_frequent": _Band(self, "zh_frequent", shuffled(v.zh_tech), count * 10 // 100,
                                 count),
            "zh_medium": _Band(self, "zh_medium", shuffled(v.zh_tail[:3000]), count // 100,
                               count * 10 // 100 - 1),
            "zh_rare": _Band(self, "zh_rare", shuffled(v.zh_rare, v.zh_tail[3000:12000]), 1, 8),
            "absent_en": _Band(self, "absent_en", shuffled(vocab.ABSENT_EN, v.en_tail[-8000:]),
                               0, 0),
            "absent_zh": _Band(self, "absent_zh", shuffled(vocab.ABSENT_ZH, v.zh_tail[-8000:]),
                               0, 0),
        }

    def frequency(self, text: str) -> int:
        """Documents containing `text`; a term found in any path never counts as absent."""
        found = self._frequency.get(text)
        if found is None:
            needle = text.encode().lower()
            found = sum(1 for data in self.folded if needle in data)
            if found == 0 and any(needle in path for path in self.folded_paths):
                found = -1  # path-only: fits no band
            self._frequency[text] = found
        return found

    def query(self, shape: str) -> QuerySet:
        return QuerySet(shape, [self.bands[band].take() for band in SHAPES[shape]])


def pick_queries(picker: TermPicker, rotations: int) -> dict[str, list[QuerySet]]:
    """Per shape: the reference query (index 0), then `rotations` fresh term sets.

    References are drawn first for all shapes so they do not depend on how many
    rotations a run asks for (a `--quick` run quotes the same reference queries).
    """
    sets = {shape: [picker.query(shape)] for shape in SHAPES}
    for shape in SHAPES:
        sets[shape] += [picker.query(shape) for _ in range(rotations)]
    return sets
