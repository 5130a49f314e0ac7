"""Each row's nearest columns above a threshold (resolution's name pairs, the synonym edges): what a
sort of the whole row gives, from the columns the block's one pass finds."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from graphunified_assets.lib.vectors.neighbours import columns_above, top_columns


@settings(max_examples=200, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    shape=st.tuples(st.integers(1, 12), st.integers(1, 40)),
    k=st.integers(1, 8),
    threshold=st.floats(-1.0, 1.0),
)
def test_a_rows_top_columns_are_its_top_k_that_reach_the_threshold(
    seed: int, shape: tuple[int, int], k: int, threshold: float
) -> None:
    similarities = np.random.default_rng(seed).uniform(-1, 1, shape).astype(np.float32)
    similarities[:, ::3] = similarities[:, :1]  # ties, broken by column
    above = columns_above(similarities, threshold)
    assert len(above) == len(similarities)
    for row, columns in zip(similarities, above, strict=True):
        assert columns.tolist() == np.flatnonzero(row >= threshold).tolist()
        whole = np.argsort(-row, kind="stable")[:k]
        assert top_columns(row, columns, k) == [j for j in whole.tolist() if row[j] >= threshold]


def test_no_column_reaches_the_threshold() -> None:
    similarities = np.full((3, 5), 0.5, np.float32)
    above = columns_above(similarities, 0.9)
    assert [len(a) for a in above] == [0, 0, 0]
    assert top_columns(similarities[0], above[0], 2) == []
