"""bench/entity_vectors.py's in-memory entity indexes: what each variant changes, and bad names."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import numpy as np
import pytest

from bench.entity_vectors import ShiftedIndex, entity_index
from graphunified_query.core.indexes.dense import DenseIndex


def _stored() -> DenseIndex:
    matrix = np.eye(4, dtype=np.float32)[:3] + 0.1
    return DenseIndex(("a", "b", "c"), matrix / np.linalg.norm(matrix, axis=1, keepdims=True))


def _engine(index: DenseIndex) -> Any:
    return cast(Any, SimpleNamespace(snapshot=SimpleNamespace(entity_vectors=index, entities=[])))


def test_an_offset_moves_every_cosine_and_keeps_the_ranking() -> None:
    stored = _stored()
    query = np.array([0.9, 0.3, 0.1, 0.0], np.float32)
    shifted = entity_index("offset:0.03", _engine(stored), Path("."))
    assert np.allclose(shifted.similarities(query), stored.similarities(query) + 0.03)
    assert [r for r, _ in shifted.search(query, 3)] == [r for r, _ in stored.search(query, 3)]


def test_noise_is_fixed_per_query_and_seed() -> None:
    stored = _stored()
    query = np.array([0.9, 0.3, 0.1, 0.0], np.float32)
    noisy = ShiftedIndex(stored.ids, stored.matrix, noise=0.5, seed=0)
    again = ShiftedIndex(stored.ids, stored.matrix, noise=0.5, seed=0)
    other = ShiftedIndex(stored.ids, stored.matrix, noise=0.5, seed=1)
    assert np.array_equal(noisy.similarities(query), again.similarities(query))
    assert not np.allclose(noisy.similarities(query), stored.similarities(query))
    assert not np.allclose(noisy.similarities(query), other.similarities(query))


def test_whole_is_the_stored_index_and_zero_has_no_similarity() -> None:
    stored = _stored()
    assert entity_index("whole", _engine(stored), Path(".")) is stored
    zero = entity_index("zero", _engine(stored), Path("."))
    assert not zero.similarities(np.ones(4, np.float32)).any()


@pytest.mark.parametrize("variant", ["wholes", "offset", "offset:x", "noise:0.1", "zero:1"])
def test_a_bad_variant_is_one_line_naming_the_choices(variant: str) -> None:
    with pytest.raises(SystemExit, match=r"--variants: .* is not one of whole, composed"):
        entity_index(variant, _engine(_stored()), Path("."))
