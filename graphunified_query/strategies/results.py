"""The one result type every retriever returns, and the answer built from it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

from graphunified_query.core.providers.cost import Usage

ContextKind = Literal["chunk", "entity", "relationship", "fact", "community_report"]

_EMPTY: Mapping[str, Any] = MappingProxyType({})


@dataclass(frozen=True)
class RetrievalResult:
    """One retrieved context, whatever the strategy that found it.

    ``source`` is the citation label ``"file > section"``; ``chunk_id``/``document_id`` point at the
    passage behind the context (for entity, relationship and report contexts: the best supporting
    chunk, with all of them in ``chunk_ids``). ``metadata`` holds strategy details such as hop depth
    and per-signal fusion scores.
    """

    text: str
    score: float
    source: str
    kind: ContextKind = "chunk"
    chunk_id: str | None = None
    document_id: str | None = None
    chunk_ids: tuple[str, ...] = ()
    entities: tuple[str, ...] = ()  # entity titles the context is about or mentions
    relationships: tuple[str, ...] = ()  # "SOURCE -> TARGET" labels
    metadata: Mapping[str, Any] = field(default_factory=lambda: _EMPTY)

    def as_dict(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "score": self.score,
            "source": self.source,
            "chunk_id": self.chunk_id,
            "document_id": self.document_id,
            "metadata": {
                "kind": self.kind,
                "chunk_ids": list(self.chunk_ids),
                "entities": list(self.entities),
                "relationships": list(self.relationships),
                **dict(self.metadata),
            },
        }


@dataclass(frozen=True)
class Retrieval:
    """What one strategy returned for one query, with what it cost (LLM map steps, routing)."""

    strategy: str
    results: tuple[RetrievalResult, ...]
    usage: Usage = field(default_factory=Usage)
    llm_calls: int = 0
    cost_usd: float = 0.0
    metadata: Mapping[str, Any] = field(default_factory=lambda: _EMPTY)  # e.g. router reason, fallbacks taken


@dataclass(frozen=True)
class GeneratedAnswer:
    """An answer with the numbered contexts it was built from (``[n]`` indexes into ``contexts``)."""

    text: str
    contexts: tuple[RetrievalResult, ...]
    usage: Usage = field(default_factory=Usage)
    llm_calls: int = 0
    cost_usd: float = 0.0
    supported: bool = True  # False when the contexts did not support an answer
    cached: bool = False  # served from the LLM cache: this call cost nothing
    cached_usage: Usage = field(default_factory=Usage)  # what the original (cached) call cost
