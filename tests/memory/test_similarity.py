"""Shingles and the similarity join behind the doctor's near-duplicate check."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from amux.memory import similarity


def test_shingles_ignore_case_and_punctuation() -> None:
    assert similarity.shingles("Use pytest -x, always!") == similarity.shingles(
        "use PYTEST x always")
    assert len(similarity.shingles("部署说明")) == 2


def _jaccard(a: set[int], b: set[int]) -> float:
    return len(a & b) / len(a | b)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sets(st.integers(0, 40), min_size=1, max_size=25), max_size=12),
       st.sampled_from([0.25, 0.5, 0.8, 1.0]))
def test_prefix_filter_join_is_exact(sets: list[set[int]], threshold: float) -> None:
    pairs, stopped = similarity.similar_pairs(sets, threshold)
    expected = {(i, j) for i, j in itertools.combinations(range(len(sets)), 2)
                if _jaccard(sets[i], sets[j]) >= threshold}
    assert not stopped and {(i, j) for i, j, _s in pairs} == expected
    assert len(pairs) == len(expected)


def test_sketches_still_find_large_near_duplicates() -> None:
    base = [f"w{i} " for i in range(3000)]
    edited = list(base)
    for i in range(0, 3000, 25):  # every 25th word changed: Jaccard well above 0.5
        edited[i] = f"x{i} "
    others = [{(n << 20) + i for i in range(400)} for n in range(20)]
    sets = [similarity.shingles("".join(base)), *others, similarity.shingles("".join(edited))]
    assert len(sets[0]) > similarity.SKETCH_SHINGLES
    pairs, stopped = similarity.near_duplicates(sets)
    assert [(i, j) for i, j, _s in pairs] == [(0, 21)] and not stopped
    assert pairs[0][2] == pytest.approx(_jaccard(sets[0], sets[21]))
