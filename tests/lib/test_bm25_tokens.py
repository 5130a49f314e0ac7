"""BM25 from the kept tokens scores as bm25s's own pipeline does, whatever the cache held."""

from __future__ import annotations

import tempfile
from pathlib import Path

import bm25s
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from graphunified_assets.lib.indexes.bm25_tokens import chunk_tokens
from graphunified_query.core.indexes.bm25 import _STEMMER, BM25Index, tokenize

_WORDS = ["river", "rivers", "flooded", "floods", "mill", "the", "of", "Harrow", "1894", "wool", "é", ""]
_TEXTS = st.lists(st.lists(st.sampled_from(_WORDS), max_size=8).map(" ".join), min_size=1, max_size=12)


@settings(max_examples=80, deadline=None)
@given(first=_TEXTS, second=_TEXTS, torn=st.booleans())
def test_kept_tokens_are_the_tokenizers_and_score_as_bm25s_does(
    first: list[str], second: list[str], torn: bool
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "tokens.parquet"
        assert chunk_tokens(path, first).to_pylist() == tokenize(first)
        if torn:
            path.write_bytes(path.read_bytes()[:40])  # a torn cache: the texts are tokenized again
        texts = [*second, *first[:3]]  # an update: some texts kept, some new
        tokens = chunk_tokens(path, texts)
        assert tokens.to_pylist() == tokenize(texts)
        if not any(tokens.to_pylist()):
            return  # no token at all: bm25s has nothing to index
        ids = [f"c{n}" for n in range(len(texts))]
        index = BM25Index.build(ids, tokens, k1=1.5, b=0.75)
        reference = bm25s.BM25(k1=1.5, b=0.75)  # bm25s's own tokenizer and index
        reference.index(
            bm25s.tokenize(texts, stopwords="en", stemmer=_STEMMER.stemWords, show_progress=False),
            show_progress=False,
        )
        for query in ("river floods", "mill of Harrow", "1894 wool é"):
            words = [t for t in tokenize([query])[0] if t in reference.vocab_dict]
            expected = reference.get_scores(words) if words else np.zeros(len(texts))
            np.testing.assert_allclose(index.scores(query), expected, rtol=1e-6)
