"""Everything the retrievers read, held in memory: tables, vectors, BM25, PPR graph.

`snapshot_loader.load_snapshot` builds one from a published generation, local or remote. The
query side never imports Dagster: it reads the materialized files.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import pyarrow as pa

from graphunified_query.core.indexes.bm25 import BM25Index
from graphunified_query.core.indexes.chunk_similarity import SimilarityEdges
from graphunified_query.core.indexes.dense import DenseIndex
from graphunified_query.core.indexes.ppr_graph import PPRGraph
from graphunified_query.core.indexes.report_points import ReportPoints
from graphunified_query.core.risk import LEVELS, LOW, RiskLevel, rank
from graphunified_query.core.tables import with_chunk_risk
from graphunified_query.snapshot.adjacency import Adjacency, build_adjacency
from graphunified_query.snapshot.arrow_rows import ArrowRows, ArrowStrings, column_of


@dataclass(frozen=True)
class Chunks:
    ids: tuple[str, ...]
    texts: Sequence[str]  # `ArrowStrings` when loaded: a text is materialized when read
    document_ids: tuple[str, ...]
    sections: tuple[str, ...]
    indexes: tuple[int, ...]  # position in the document; after 0 a chunk may open mid-sentence
    # Index-time risk (graphunified_query.core.risk); empty for homes built before flags existed.
    risk_flags: tuple[tuple[str, ...], ...] = ()
    risk_levels: tuple[RiskLevel, ...] = ()

    def source(self, row: int) -> str:
        """The citation label: ``file > section`` (just the file when it has no headings)."""
        return source_label(self.document_ids[row], self.sections[row])

    def risk_level(self, row: int) -> RiskLevel:
        return self.risk_levels[row] if self.risk_levels else LOW

    def flags(self, row: int) -> tuple[str, ...]:
        return self.risk_flags[row] if self.risk_flags else ()


def chunks_from_arrow(table: pa.Table) -> Chunks:
    """The chunk columns of ``chunk_vectors``; one written before risk flags existed reads as "low"."""
    table = with_chunk_risk(table)
    return Chunks(
        ids=tuple(table.column("id").to_pylist()),
        texts=ArrowStrings(table.column("text")),
        document_ids=tuple(table.column("document_id").to_pylist()),
        sections=tuple(table.column("section").to_pylist()),
        indexes=tuple(table.column("chunk_index").to_pylist()),
        risk_flags=tuple(tuple(flags) for flags in table.column("risk_flags").to_pylist()),
        risk_levels=tuple(LEVELS[rank(level)] for level in table.column("risk_level").to_pylist()),
    )


def source_label(document_id: str, section: str) -> str:
    return f"{document_id} > {section}" if section else document_id


@dataclass(frozen=True)
class Snapshot:
    home: Path
    model: str
    chunks: Chunks
    chunk_vectors: DenseIndex
    # Rows as mappings: `arrow_rows.ArrowRows` when loaded (read on demand), dicts in tests.
    entities: Sequence[Mapping[str, Any]]
    entity_vectors: DenseIndex  # rows aligned with `entities`
    relationships: Sequence[Mapping[str, Any]]
    relationship_vectors: DenseIndex
    facts: Sequence[Mapping[str, Any]]
    fact_vectors: DenseIndex
    reports: Sequence[Mapping[str, Any]]
    report_vectors: DenseIndex
    communities: dict[int, dict[str, Any]]  # community number → row
    bm25: BM25Index
    graph: PPRGraph
    chunk_similarity: SimilarityEdges | None = None  # None: built before SIMILAR_TO edges existed
    generation: int = 0  # the published generation loaded; 0: the live files of an older home
    report_points: ReportPoints | None = None  # global search's map points; None: an older home
    # The strategies the index was built for (`strategies.enabled` then); None: all of them.
    built_for: tuple[str, ...] | None = None
    extras: dict[str, Any] = field(default_factory=dict)  # per-strategy caches built on first use

    @cached_property
    def chunk_row(self) -> dict[str, int]:
        return self.chunk_vectors.row

    @cached_property
    def entity_row(self) -> dict[str, int]:
        return {identifier: i for i, identifier in enumerate(column_of(self.entities, "id"))}

    @cached_property
    def entity_by_title(self) -> dict[str, int]:
        return {title: i for i, title in enumerate(column_of(self.entities, "title"))}

    @cached_property
    def adjacency(self) -> Adjacency:
        """The relationships around each entity, as arrays, heaviest first (`adjacency`)."""
        return build_adjacency(self.entities, self.relationships, self.entity_row)

    @cached_property
    def chunk_entities(self) -> dict[str, list[int]]:
        """chunk id → entity rows mentioning it."""
        mentions: dict[str, list[int]] = defaultdict(list)
        for i, chunk_ids in enumerate(column_of(self.entities, "text_unit_ids")):
            for chunk_id in chunk_ids:
                mentions[chunk_id].append(i)
        return dict(mentions)

    def warm(self) -> None:
        """Build now what the retrievers build on first use (row maps, the adjacency, the columns
        read in loops), so a server's first query costs what its second does."""
        for rows in (self.entities, self.relationships, self.facts, self.reports):
            if isinstance(rows, ArrowRows):
                rows.warm()
        for name in ("chunk_row", "entity_row", "entity_by_title", "adjacency", "chunk_entities"):
            getattr(self, name)

    def chunk_rows(self, chunk_ids: list[str] | tuple[str, ...]) -> list[int]:
        """Rows of the chunk ids that are live in this snapshot, in the given order."""
        return [self.chunk_row[c] for c in chunk_ids if c in self.chunk_row]
