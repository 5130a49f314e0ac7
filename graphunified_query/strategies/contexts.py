"""Turning index rows into `RetrievalResult`s: one place decides how each kind is shown and cited."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

from graphunified_query.snapshot.model import Snapshot
from graphunified_query.strategies.results import RetrievalResult


def chunk_result(snapshot: Snapshot, row: int, score: float, **metadata: Any) -> RetrievalResult:
    chunk_id = snapshot.chunks.ids[row]
    mentioned = snapshot.chunk_entities.get(chunk_id, [])
    return RetrievalResult(
        text=snapshot.chunks.texts[row],
        score=float(score),
        source=snapshot.chunks.source(row),
        kind="chunk",
        chunk_id=chunk_id,
        document_id=snapshot.chunks.document_ids[row],
        chunk_ids=(chunk_id,),
        entities=tuple(snapshot.entities[i]["title"] for i in mentioned[:20]),
        metadata=MappingProxyType({"continues": snapshot.chunks.indexes[row] > 0, **metadata}),
    )


# Chunk ids in ranked order, or already as {chunk id: rank} (build that once per query: an element
# cites the best-ranked chunk it has, and rebuilding the map per element is quadratic).
RankedChunks = Sequence[str] | Mapping[str, int]


def chunk_ranks(ranked_chunks: Sequence[str]) -> dict[str, int]:
    return {c: i for i, c in enumerate(ranked_chunks)}


def entity_result(
    snapshot: Snapshot, row: int, score: float, *, ranked_chunks: RankedChunks = (), **metadata: Any
) -> RetrievalResult:
    entity = snapshot.entities[row]
    return _anchored(
        snapshot,
        entity_text(entity),
        score,
        "entity",
        entity["text_unit_ids"],
        ranked_chunks,
        entities=(entity["title"],),
        metadata=metadata,
    )


def relationship_result(
    snapshot: Snapshot, row: int, score: float, *, ranked_chunks: RankedChunks = (), **metadata: Any
) -> RetrievalResult:
    rel = snapshot.relationships[row]
    text = relationship_text(rel)
    if rel.get("keywords"):  # LightRAG's high-level keywords (homes built before them have none)
        metadata = {"keywords": list(rel["keywords"]), **metadata}
    return _anchored(
        snapshot,
        text,
        score,
        "relationship",
        rel["text_unit_ids"],
        ranked_chunks,
        entities=(rel["source"], rel["target"]),
        relationships=(f"{rel['source']} -> {rel['target']}",),
        metadata=metadata,
    )


def entity_text(entity: Mapping[str, Any]) -> str:
    """An entity as a context shows it (and `rerank.stored` finds its stored vector by)."""
    return f"{entity['title']} ({entity['type']}): {entity['description']}"


def relationship_text(rel: Mapping[str, Any]) -> str:
    return f"{rel['source']} -> {rel['target']} ({rel['type']}): {rel['description']}"


def _anchored(
    snapshot: Snapshot,
    text: str,
    score: float,
    kind: Any,
    chunk_ids: Sequence[str],
    ranked_chunks: RankedChunks,
    *,
    entities: tuple[str, ...] = (),
    relationships: tuple[str, ...] = (),
    metadata: dict[str, Any],
) -> RetrievalResult:
    """A graph element cites its best supporting chunk: the first of ``ranked_chunks`` it has."""
    live = [c for c in chunk_ids if c in snapshot.chunk_row]
    order = ranked_chunks if isinstance(ranked_chunks, Mapping) else chunk_ranks(ranked_chunks)
    last = len(order)
    live.sort(key=lambda c: order.get(c, last))
    best = live[0] if live else None
    row = snapshot.chunk_row[best] if best is not None else None
    return RetrievalResult(
        text=text,
        score=float(score),
        source=snapshot.chunks.source(row) if row is not None else "graph",
        kind=kind,
        chunk_id=best,
        document_id=snapshot.chunks.document_ids[row] if row is not None else None,
        chunk_ids=tuple(live),
        entities=entities,
        relationships=relationships,
        metadata=MappingProxyType(metadata),
    )
