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

from graphunified_query.arrow_rows import ArrowRows, column_of


@dataclass(frozen=True)
class Adjacency:
    ids: Sequence[str]  # node → entity id: the entity rows', then the dangling endpoints'
    entity_row: Mapping[str, int]  # entity id → node (its entity row)
    dangling: Mapping[str, int]  # an endpoint id with no entity row → its node
    starts: np.ndarray  # int64, one per node + 1: where a node's slots begin
    neighbour: np.ndarray  # int32 per slot: the node at the other end
    relationship: np.ndarray  # int32 per slot: the relationship row
    weight: np.ndarray  # float64 per slot: the relationship's weight
    degree: np.ndarray  # float64 per node: the total weight of its relationships

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

    def pairs(self, entity_id: str) -> list[tuple[str, int]]:
        """(neighbour id, relationship row) in stored order (relationship row ascending)."""
        span = self.span(entity_id)
        order = np.argsort(self.relationship[span], kind="stable")
        ids = self.ids
        return [
            (ids[n], r)
            for n, r in zip(
                self.neighbour[span][order].tolist(), self.relationship[span][order].tolist(), strict=True
            )
        ]


def build_adjacency(
    entities: Sequence[Mapping[str, Any]],
    relationships: Sequence[Mapping[str, Any]],
    entity_row: Mapping[str, int],
) -> Adjacency:
    """The CSR adjacency over undirected relationships; ``entity_row`` maps an id to its row."""
    ids = _strings(entities, "id")
    ends = pa.concat_arrays([_strings(relationships, "source_id"), _strings(relationships, "target_id")])
    # A repeated entity id maps to its last row, as `entity_row` does: look it up reversed.
    reversed_ids = ids.take(pa.array(np.arange(len(ids) - 1, -1, -1)))
    found = pc.fill_null(pc.index_in(ends, value_set=reversed_ids), -1).to_numpy()
    nodes = np.where(found >= 0, len(ids) - 1 - found, -1).astype(np.int32)
    lost = found < 0
    dangling_ids = pc.unique(ends.filter(pa.array(lost))).to_pylist()
    dangling = {identifier: len(ids) + i for i, identifier in enumerate(dangling_ids)}
    if dangling:
        nodes[lost] = [dangling[e] for e in ends.filter(pa.array(lost)).to_pylist()]
    n_nodes, m = len(ids) + len(dangling), len(relationships)
    # Interleaved (source, target) per relationship: a stable sort by node keeps each node's
    # slots in relationship-row order, the order the dict appended them in.
    end = np.stack([nodes[:m], nodes[m:]], axis=1).ravel()
    other = np.stack([nodes[m:], nodes[:m]], axis=1).ravel()
    rows = np.repeat(np.arange(m, dtype=np.int32), 2)
    weights = _weights(relationships)[rows]
    all_ids = pa.concat_arrays([ids, pa.array(dangling_ids, pa.string())])
    id_rank = np.empty(n_nodes, np.int64)
    id_rank[pc.sort_indices(all_ids).to_numpy()] = np.arange(n_nodes)
    order = np.lexsort((rows, id_rank[other], -weights, end))
    return Adjacency(
        ids=column_of(entities, "id") + dangling_ids if dangling_ids else column_of(entities, "id"),
        entity_row=entity_row,
        dangling=dangling,
        starts=np.concatenate([[0], np.cumsum(np.bincount(end, minlength=n_nodes))]).astype(np.int64),
        neighbour=other[order],
        relationship=rows[order],
        weight=weights[order],
        # bincount adds in array order: each node's weights in relationship-row order, as the
        # dict's `sum` did (float addition is not associative).
        degree=np.bincount(end, weights=weights, minlength=n_nodes),
    )


def _strings(rows: Sequence[Mapping[str, Any]], name: str) -> pa.Array:
    """A string column as one Arrow array (straight from the table when loaded)."""
    if isinstance(rows, ArrowRows):
        return pc.cast(rows.table.column(name), pa.string()).combine_chunks()
    return pa.array(column_of(rows, name), pa.string())


def _weights(relationships: Sequence[Mapping[str, Any]]) -> np.ndarray:
    if isinstance(relationships, ArrowRows):
        column = pc.cast(relationships.table.column("weight"), pa.float64())
        return np.asarray(column.to_numpy(), np.float64)
    return np.array([float(w) for w in column_of(relationships, "weight")], np.float64)
