"""The entity graph's adjacency as CSR arrays, each entity's relationships heaviest first.

Graph walks (graphrag_local, lightrag, expanded) follow an entity's relationships, a hub's
heaviest first. Held as a dict of Python lists of tuples at 25K chunks (~0.6M relationships)
the adjacency took hundreds of megabytes and seconds of Python loops to build, and sorting a
hub's thousands of neighbours per entity on first use cost the first queries. Here it is a few
flat arrays built with one numpy sort: ``starts[node]:starts[node + 1]`` are a node's slots, in
the order a bounded walk follows them (weight descending, then neighbour id, then relationship
row), and the weighted degree is one array summed in relationship-row order (the order the
dict's Python sums used, so every score stays bit-identical).

Nodes are entity rows; a relationship endpoint with no entity row (a dangling id) gets a node
after them, so a walk sees exactly the neighbours the dict had.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from graphunified_query.snapshot.arrow_rows import ArrowRows, column_of, one_array


@dataclass(frozen=True)
class Adjacency:
    ids: Sequence[str]  # node → entity id: the entity rows', then the dangling endpoints'
    entity_row: Mapping[str, int]  # entity id → node (its entity row)
    dangling: Mapping[str, int]  # an endpoint id with no entity row → its node
    entity_count: int  # nodes below it are entity rows
    starts: np.ndarray  # int64, one per node + 1: where a node's slots begin
    neighbour: np.ndarray  # int32 per slot: the node at the other end
    relationship: np.ndarray  # int32 per slot: the relationship row
    weight: np.ndarray  # float64 per slot: the relationship's weight
    stored: np.ndarray  # int32 per slot: the slots again, each node's in relationship-row order
    degree: np.ndarray  # float64 per node: the total weight of its relationships
    source: np.ndarray  # int32 per relationship row: its source node
    target: np.ndarray  # int32 per relationship row: its target node
    row_weight: np.ndarray  # float64 per relationship row (a missing weight is 0)

    def node(self, entity_id: str) -> int | None:
        found = self.entity_row.get(entity_id)
        return self.dangling.get(entity_id) if found is None else found

    def span(self, entity_id: str) -> slice:
        """A node's slots, heaviest first (empty for an id in no relationship)."""
        node = self.node(entity_id)
        if node is None:
            return slice(0, 0)
        return slice(int(self.starts[node]), int(self.starts[node + 1]))

    def total_weight(self, entity_id: str) -> float:
        node = self.node(entity_id)
        return 0.0 if node is None else float(self.degree[node])

    def heaviest_relationships(self, entity_id: str, limit: int) -> list[int]:
        """Rows of the ``limit`` heaviest relationships of an entity."""
        span = self.span(entity_id)
        return self.relationship[span.start : min(span.stop, span.start + limit)].tolist()

    def stored_slots(self, entity_id: str) -> np.ndarray:
        """A node's slots in stored order (relationship row ascending), as the dict listed them."""
        return self.stored[self.span(entity_id)]

    def pairs(self, entity_id: str) -> list[tuple[str, int]]:
        """(neighbour id, relationship row) in stored order."""
        slots = self.stored_slots(entity_id)
        neighbours, rows = self.neighbour[slots].tolist(), self.relationship[slots].tolist()
        return [(self.ids[n], r) for n, r in zip(neighbours, rows, strict=True)]

    def endpoints(self, row: int) -> tuple[str, str]:
        """A relationship's (source id, target id)."""
        return self.ids[self.source[row]], self.ids[self.target[row]]

    def endpoint_rows(self, row: int) -> tuple[int | None, int | None]:
        """A relationship's source and target entity rows (None: an id with no entity row)."""
        source, target = int(self.source[row]), int(self.target[row])
        count = self.entity_count
        return (source if source < count else None), (target if target < count else None)


def build_adjacency(
    entities: Sequence[Mapping[str, Any]],
    relationships: Sequence[Mapping[str, Any]],
    entity_row: Mapping[str, int],
) -> Adjacency:
    """The CSR adjacency over undirected relationships; ``entity_row`` maps an id to its row."""
    ids = _strings(entities, "id")
    # Endpoints are looked up column by column in Arrow: no Python string per relationship.
    ends = [_strings(relationships, name) for name in ("source_id", "target_id")]
    found = [pc.index_in(end, value_set=ids) for end in ends]
    lost = [pc.is_null(rows) for rows in found]
    dangling_ids = pc.unique(
        pa.concat_arrays([end.filter(gone) for end, gone in zip(ends, lost, strict=True)])
    )
    # A repeated entity id is its last row, as in `entity_row` (index_in gives the first).
    remap = None
    if len(entity_row) < len(ids):
        remap = np.fromiter((entity_row[e] for e in ids.to_pylist()), np.int32, len(ids))
    source, target = (
        _nodes(rows, end, gone, dangling_ids, remap, len(ids))
        for rows, end, gone in zip(found, ends, lost, strict=True)
    )
    n_nodes, m = len(ids) + len(dangling_ids), len(relationships)
    # Interleaved (source, target) per relationship: a stable sort by node keeps each node's
    # slots in relationship-row order, the order the dict appended them in.
    end = np.stack([source, target], axis=1).ravel()
    other = np.stack([target, source], axis=1).ravel()
    rows = np.repeat(np.arange(m, dtype=np.int32), 2)
    row_weight = _weights(relationships)
    weights = row_weight[rows]
    id_rank = np.empty(n_nodes, np.int64)
    id_rank[pc.sort_indices(pa.concat_arrays([ids, dangling_ids])).to_numpy()] = np.arange(n_nodes)
    order = np.lexsort((rows, id_rank[other], -weights, end))
    stored = np.lexsort((rows[order], end[order])).astype(np.int32)
    dangling = dangling_ids.to_pylist()
    entity_ids = column_of(entities, "id")
    return Adjacency(
        ids=entity_ids + dangling if dangling else entity_ids,
        entity_row=entity_row,
        dangling={e: len(ids) + i for i, e in enumerate(dangling)},
        entity_count=len(ids),
        starts=np.concatenate([[0], np.cumsum(np.bincount(end, minlength=n_nodes))]).astype(np.int64),
        neighbour=other[order],
        relationship=rows[order],
        weight=weights[order],
        stored=stored,
        # bincount adds in array order: each node's weights in relationship-row order, as the
        # dict's `sum` did (float addition is not associative).
        degree=np.bincount(end, weights=weights, minlength=n_nodes),
        source=source,
        target=target,
        row_weight=row_weight,
    )


def _nodes(
    found: pa.Array,
    ends: pa.Array,
    lost: pa.Array,
    dangling_ids: pa.Array,
    remap: np.ndarray | None,
    entity_count: int,
) -> np.ndarray:
    """Each endpoint's node: its entity row, else its dangling id's node after the entity rows."""
    nodes = pc.fill_null(found, -1).to_numpy().astype(np.int32)
    if remap is not None:
        nodes = np.where(nodes >= 0, remap[nodes], nodes).astype(np.int32)
    if len(dangling_ids):
        extra = pc.index_in(ends.filter(lost), value_set=dangling_ids).to_numpy()
        nodes[lost.to_numpy(zero_copy_only=False)] = entity_count + extra
    return nodes


def _strings(rows: Sequence[Mapping[str, Any]], name: str) -> pa.Array:
    """A string column as one Arrow array: the loaded table's own (mapped, not copied)."""
    if isinstance(rows, ArrowRows):
        column = one_array(rows.table.column(name))
        return column if column.type == pa.string() else column.cast(pa.string())
    return pa.array(column_of(rows, name), pa.string())


def _weights(relationships: Sequence[Mapping[str, Any]]) -> np.ndarray:
    if isinstance(relationships, ArrowRows):
        column = one_array(relationships.table.column("weight")).cast(pa.float64())
        return pc.fill_null(column, 0.0).to_numpy()
    return np.array([0.0 if w is None else float(w) for w in column_of(relationships, "weight")], np.float64)
