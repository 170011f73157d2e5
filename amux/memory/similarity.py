"""Near-duplicate text: shingles of a document and the similarity join over a scope.

Shingle hashes are the same in every process (and so are the doctor's findings):
each token is its CRC-32, and a shingle is the tuple hash of its tokens' integers,
which PYTHONHASHSEED does not salt (it salts str and bytes only). Measured on the
benchmark corpus (8.4 MB): as fast as the salted `hash()` of the token tuple it
replaces (0.6 s); BLAKE2b of each token costs 3 times that, of each shingle's text
5 times. Two tokens sharing a CRC-32 merely count as one word. docs/store.md
("Near-duplicates") explains the thresholds.
"""

from __future__ import annotations

import math
import re
import zlib
from collections import Counter, defaultdict

SHINGLE_TOKENS = 3
NEAR_DUPLICATE_JACCARD = 0.5
SKETCH_SHINGLES = 128
SKETCH_JACCARD = 0.25
"""Candidate pairs: bottom-k sketches of this many shingles, joined at this Jaccard."""
MAX_COMPARISONS = 50_000
MAX_PROBES = 500_000
"""Candidate pairs verified, and index entries probed to find them, at most; past
either the join stops and says so (a scope of hundreds of mutually similar
documents; ordinary scopes use a few thousand)."""

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_TOKEN = re.compile(f"[{_CJK}]|[^\\W{_CJK}]+")
"""Words; each CJK ideograph or kana alone (those scripts do not separate words)."""


def shingles(text: str) -> set[int]:
    """Stable hashes of every `SHINGLE_TOKENS` consecutive tokens of the case-folded text."""
    tokens = list(map(zlib.crc32, map(str.encode, _TOKEN.findall(text.casefold()))))
    return set(map(hash, zip(*(tokens[k:] for k in range(SHINGLE_TOKENS)), strict=False)))


def near_duplicates(sets: list[set[int]]) -> tuple[list[tuple[int, int, float]], bool]:
    """Pairs (i, j, Jaccard) with i < j and Jaccard ≥ `NEAR_DUPLICATE_JACCARD`, and
    whether the join stopped at its work budget.

    Identical sets pair with the first of them. Candidates among the others come
    from bottom-k sketches (the `SKETCH_SHINGLES` smallest hashes of
    each set, the whole set when smaller) joined at `SKETCH_JACCARD`; every
    candidate is then verified exactly on the full sets. For sets no larger than a
    sketch the answer is exact; for larger ones a pair at Jaccard ≥ 0.5 has an
    expected sketch Jaccard ≥ 1/3, so 0.25 leaves about two standard deviations of
    sampling noise (measured: no pair missed on the benchmark corpus with 40 planted
    near-duplicates, at a fifth of the exact join's time).
    """
    pairs: list[tuple[int, int, float]] = []
    first_of: dict[frozenset[int], int] = {}
    distinct: list[int] = []  # identical sets pair with the first at 1.0 and join no further
    for i, shingle_set in enumerate(sets):
        first = first_of.setdefault(frozenset(shingle_set), i)
        if first == i:
            distinct.append(i)
        else:
            pairs.append((first, i, 1.0))
    sketches = [sets[i] if len(sets[i]) <= SKETCH_SHINGLES
                else set(sorted(sets[i])[:SKETCH_SHINGLES]) for i in distinct]
    candidates, stopped = similar_pairs(sketches, SKETCH_JACCARD)
    for a, b, _estimate in candidates:
        i, j = distinct[a], distinct[b]
        common = len(sets[i] & sets[j])
        similarity = common / (len(sets[i]) + len(sets[j]) - common)
        if similarity >= NEAR_DUPLICATE_JACCARD:
            pairs.append((i, j, similarity))
    return pairs, stopped


def similar_pairs(sets: list[set[int]], threshold: float) -> (
    tuple[list[tuple[int, int, float]], bool]
):
    """Every pair (i, j, Jaccard), i < j, with Jaccard ≥ `threshold`, exactly, and
    whether it stopped at its work budget (then the pairs found so far).

    Prefix filtering (Chaudhuri et al. 2006; Bayardo et al.'s All-Pairs): order all
    shingles one fixed way, rarest first; two sets with Jaccard ≥ t share a shingle
    within the first |S| - ceil(t·|S|) + 1 of each. Only pairs sharing such a prefix
    shingle, with compatible sizes, are compared, so common boilerplate never makes
    the check quadratic. Shingles found in one set only come first and can match
    nothing: a set whose prefix is all such shingles is skipped unsorted.
    """
    seen: set[int] = set()
    repeated: set[int] = set()
    for shingle_set in sets:
        repeated |= shingle_set & seen
        seen |= shingle_set
    shared_sets = [shingle_set & repeated for shingle_set in sets]
    frequency: Counter[int] = Counter()
    for shared in shared_sets:
        frequency.update(shared)
    order = sorted(range(len(sets)), key=lambda i: len(sets[i]))
    index: dict[int, list[int]] = defaultdict(list)
    pairs: list[tuple[int, int, float]] = []
    comparisons = probes = 0
    for i in order:
        own = sets[i]
        size = len(own)
        shared = shared_sets[i]
        length = size - math.ceil(threshold * size) + 1 - (size - len(shared))
        if length <= 0:
            continue  # the prefix holds only shingles no other set has
        prefix = sorted(shared, key=lambda shingle: (frequency[shingle], shingle))[:length]
        candidates: set[int] = set()
        for shingle in prefix:
            postings = index[shingle]
            probes += len(postings)
            if probes > MAX_PROBES:
                return pairs, True
            for j in postings:
                if len(sets[j]) >= threshold * size:
                    candidates.add(j)
            postings.append(i)
        for j in sorted(candidates):
            comparisons += 1
            if comparisons > MAX_COMPARISONS:
                return pairs, True
            common = len(own & sets[j])
            similarity = common / (size + len(sets[j]) - common)
            if similarity >= threshold:
                pairs.append((min(i, j), max(i, j), similarity))
    return pairs, False
