"""`ask` on a home embeds with the variant its vectors were made with: the variant is read back from
the model name the embedders record, for every variant alone, with prefixes and fused."""

from __future__ import annotations

import pytest

from graphunified_query.core.embedding_models import LOCAL_MODELS
from graphunified_query.core.providers.embedding import make_embedder
from graphunified_query.core.settings.embedding import EmbeddingModelSettings, EmbeddingSettings

MINILM = LOCAL_MODELS["all-MiniLM-L6-v2"]
VARIANTS = [v.name for v in MINILM.variants]
SHAPES = {  # what embedding.models can hold around MiniLM, by the name each records
    "alone": lambda variant: (EmbeddingModelSettings(name=MINILM.name, variant=variant),),
    "prefixed": lambda variant: (
        EmbeddingModelSettings(name=MINILM.name, variant=variant, query_prefix="q: ", passage_prefix="p: "),
    ),
    "fused": lambda variant: (
        EmbeddingModelSettings(name=MINILM.name, variant=variant),
        EmbeddingModelSettings(name="multilingual-e5-small-q4"),
    ),
}


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("built", VARIANTS)
def test_the_variant_a_home_was_built_with_is_read_back_from_its_model_name(shape: str, built: str) -> None:
    recorded = make_embedder(EmbeddingSettings(provider="local", models=SHAPES[shape](built)), {}).model_name
    for configured in VARIANTS:
        settings = EmbeddingSettings(provider="local", models=SHAPES[shape](configured))
        followed = settings.with_recorded_variants(recorded)
        assert followed.models[0].variant == built
        assert make_embedder(followed, {}).model_name == recorded
    # A name of another model altogether (a provider's) changes nothing.
    other = EmbeddingSettings(provider="local", models=SHAPES[shape](built))
    assert other.with_recorded_variants("voyage-3.5") == other
