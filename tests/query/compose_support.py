"""Hand-built snapshots for the composable-retriever tests: a few chunks and a small entity graph.

Vectors come from a bag-of-words embedder (hashed words, as the fake Voyage server makes them),
so texts sharing words are similar and every similarity in a test can be worked out by hand.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from graphunified_query.core.indexes.bm25 import TOKENS, BM25Index, tokenize
from graphunified_query.core.indexes.dense import DenseIndex
from graphunified_query.core.indexes.ppr_graph import PPRGraph
from graphunified_query.core.providers.embedding import EmbeddingError, EmbeddingKind, normalize_rows
from graphunified_query.core.settings.model import Settings
from graphunified_query.snapshot.model import Chunks, Snapshot
from graphunified_query.strategies.base import RetrieverBase, RetrieverContext
from graphunified_query.strategies.params import StrategyParams
from graphunified_query.strategies.results import Retrieval, RetrievalResult
from tests.fakes.voyage_server import bag_of_words_vector

DIMENSION = 512


@dataclass
class WordEmbedder:
    """Bag-of-words vectors; counts its calls, and fails on demand like an unreachable provider."""

    model_name: str = "bag-of-words"
    dimension: int = DIMENSION
    fail: bool = False
    calls: list[tuple[EmbeddingKind, tuple[str, ...]]] = field(default_factory=list)

    def embed(self, texts: Sequence[str], *, kind: EmbeddingKind = "document") -> np.ndarray:
        self.calls.append((kind, tuple(texts)))
        if self.fail:
            raise EmbeddingError("Voyage embedding failed after 6 attempts: APIConnectionError")
        if not texts:
            return np.zeros((0, self.dimension), np.float32)
        return normalize_rows(np.array([bag_of_words_vector(t, self.dimension) for t in texts]))


def entity(identifier: str, title: str, description: str, chunks: Sequence[str] = ()) -> dict[str, Any]:
    return {
        "id": identifier,
        "title": title,
        "type": "PLACE",
        "description": description,
        "text_unit_ids": list(chunks),
    }


def relation(row: int, source: dict[str, Any], target: dict[str, Any], weight: float = 1.0) -> dict[str, Any]:
    return {
        "id": f"r{row}",
        "source": source["title"],
        "target": target["title"],
        "source_id": source["id"],
        "target_id": target["id"],
        "type": "RELATED",
        "description": f"{source['title']} links to {target['title']}",
        "weight": weight,
        "text_unit_ids": [],
    }


def make_context(
    chunks: Sequence[tuple[str, str, str]],  # (chunk id, document id, text)
    entities: Sequence[dict[str, Any]] = (),
    relationships: Sequence[dict[str, Any]] = (),
    *,
    embedder: WordEmbedder | None = None,
    entity_vectors: bool = True,
) -> RetrieverContext:
    embedder = embedder or WordEmbedder()
    ids = [c[0] for c in chunks]
    texts = [c[2] for c in chunks]
    entity_index = DenseIndex.empty(DIMENSION)
    no_ids = pa.chunked_array([], pa.string())
    no_edges = pa.table({"source": no_ids, "target": no_ids, "weight": pa.chunked_array([], pa.float64())})
    if entities and entity_vectors:
        entity_index = DenseIndex(
            tuple(e["id"] for e in entities),
            embedder.embed([f"{e['title']}: {e['description']}" for e in entities]),
        )
    snapshot = Snapshot(
        home=Path("."),
        model=embedder.model_name,
        chunks=Chunks(
            ids=tuple(ids),
            texts=tuple(texts),
            document_ids=tuple(c[1] for c in chunks),
            sections=("",) * len(chunks),
            indexes=(0,) * len(chunks),
        ),
        chunk_vectors=DenseIndex(tuple(ids), embedder.embed(texts)),
        entities=tuple(entities),
        entity_vectors=entity_index,
        relationships=tuple(relationships),
        relationship_vectors=DenseIndex.empty(DIMENSION),
        facts=(),
        fact_vectors=DenseIndex.empty(DIMENSION),
        reports=(),
        report_vectors=DenseIndex.empty(DIMENSION),
        communities={},
        bm25=BM25Index.build(ids, pa.array(tokenize(texts), TOKENS), k1=1.2, b=0.75),
        graph=PPRGraph.from_edges(no_ids, no_ids, no_edges),
    )
    embedder.calls.clear()  # tests count only the calls retrieval makes
    return RetrieverContext(snapshot, embedder, Settings())


# The small graph the graph tests walk:
#      Alpha Station
#     3/        \2          (edge weights: DFS takes the strongest first)
#   Bravo ---1--- Charlie
#     |1            |1
#   Delta         Echo
ALPHA = entity("a", "Alpha Station", "alpha station on the moor", ["k1"])
BRAVO = entity("b", "Bravo", "bravo quarry", ["k2"])
CHARLIE = entity("c", "Charlie", "charlie bridge", ["k2", "k3"])
DELTA = entity("d", "Delta", "delta mill", ["k3"])
ECHO = entity("e", "Echo", "echo tower", ["k4"])
ENTITIES = [ALPHA, BRAVO, CHARLIE, DELTA, ECHO]
RELATIONSHIPS = [
    relation(0, ALPHA, BRAVO, 3.0),
    relation(1, ALPHA, CHARLIE, 2.0),
    relation(2, BRAVO, CHARLIE, 1.0),
    relation(3, BRAVO, DELTA, 1.0),
    relation(4, CHARLIE, ECHO, 1.0),
]
CHUNKS = [(f"k{i}", f"doc{i}.md", f"chunk {i} text") for i in range(1, 5)]


class StaticRetriever(RetrieverBase):
    """Returns fixed results (its first ``top_k``); records the ``top_k`` it was asked for."""

    def __init__(self, context: RetrieverContext, name: str, results: Sequence[RetrievalResult]) -> None:
        super().__init__(context)
        self.name = name
        self.results = tuple(results)
        self.asked: list[int] = []

    def retrieve(self, query: str, top_k: int = 10, params: StrategyParams | None = None) -> Retrieval:
        self.asked.append(top_k)
        return Retrieval(self.name, self.results[:top_k], metadata={"static": True})


def chunk(chunk_id: str, score: float, text: str | None = None, **metadata: Any) -> RetrievalResult:
    return RetrievalResult(
        text=text or f"passage {chunk_id}",
        score=score,
        source="doc.md",
        chunk_id=chunk_id,
        document_id="doc.md",
        chunk_ids=(chunk_id,),
        metadata=metadata,
    )


def element(text: str, score: float, **metadata: Any) -> RetrievalResult:
    return RetrievalResult(text=text, score=score, source="graph", kind="entity", metadata=metadata)


class ScriptedReranker:
    """Scores each text by a fixed table; records what it was asked to score."""

    name = "scripted"

    def __init__(self, scores: dict[str, float]) -> None:
        self.scores = scores
        self.seen: list[list[str]] = []

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        self.seen.append(list(texts))
        return [self.scores[t] for t in texts]
