"""The relationships as one undirected weighted graph, held in arrays for community detection.

Duplicate pairs are summed, self-loops and non-positive weights dropped. Each node's edges are
made as Python tuples only when the clustering asks for them: an update re-clusters a few
communities, and making every node's list, with its edge signature, took ~1.2 s of each update
of the 12.6K home (316K relationships).
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection
from itertools import pairwise

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

Edge = tuple[str, str, float]
ENDS = ("source_id", "target_id")  # with "weight": the columns of the relationships a graph is made of


class WeightedGraph:
    def __init__(self, edges: pa.Table) -> None:
        """``edges``: the relationships' ``source_id``, ``target_id`` and ``weight`` columns (as
        tuples first, they took 0.4 s of each update at 316K relationships)."""
        sources, targets = (pc.cast(edges.column(c), pa.string()).combine_chunks() for c in ENDS)
        weights = np.asarray(edges.column("weight").to_numpy(), np.float64)
        kept = (
            np.asarray(pc.not_equal(sources, targets)) & (weights > 0) if len(weights) else np.zeros(0, bool)
        )
        names = pc.unique(pa.concat_arrays([sources.filter(kept), targets.filter(kept)]))
        names = names.take(pc.sort_indices(names))  # a node's code is its place in name order
        self.names: list[str] = names.to_pylist()
        self._code = {name: i for i, name in enumerate(self.names)}
        count = len(self.names)
        ends = [
            np.asarray(pc.index_in(a.filter(kept), value_set=names), np.int64) for a in (sources, targets)
        ]
        low, high = np.minimum(*ends), np.maximum(*ends)
        # Each pair once, its weights summed in input order (as a running sum of them would be).
        pairs, position = np.unique(low * count + high, return_inverse=True)
        summed = np.bincount(position, weights=weights[kept], minlength=len(pairs))
        low, high = pairs // max(count, 1), pairs % max(count, 1)
        # Both directions, each node's neighbours in name order: the CSR rows of the adjacency.
        node, neighbour = np.concatenate([low, high]), np.concatenate([high, low])
        order = np.lexsort((neighbour, node))
        self._node, self._neighbour = node[order], neighbour[order]
        self._weight = np.concatenate([summed, summed])[order]
        self._starts = np.concatenate([[0], np.cumsum(np.bincount(self._node, minlength=count))])
        self._made: dict[str, list[Edge]] = {}

    def __bool__(self) -> bool:
        return bool(self.names)

    def edges_of(self, node: str) -> list[Edge]:
        """``node``'s (node, neighbour, weight) edges, neighbours in name order."""
        made = self._made.get(node)
        if made is None:
            i = self._code[node]
            rows = slice(self._starts[i], self._starts[i + 1])
            neighbours, weights = self._neighbour[rows].tolist(), self._weight[rows].tolist()
            made = self._made[node] = [
                (node, self.names[j], w) for j, w in zip(neighbours, weights, strict=True)
            ]
        return made

    def strengths(self, within: Collection[str] | None = None) -> dict[str, float]:
        """Each node's total edge weight; with ``within``, each of those nodes' weight of the
        edges to the others."""
        if within is None:
            totals = np.bincount(self._node, weights=self._weight, minlength=len(self.names))
            return dict(zip(self.names, totals.tolist(), strict=True))
        codes = np.fromiter((self._code[n] for n in within), np.int64, len(within))
        among = np.zeros(len(self.names), bool)
        among[codes] = True
        inside = among[self._node] & among[self._neighbour]
        totals = np.bincount(self._node[inside], weights=self._weight[inside], minlength=len(self.names))
        return {self.names[c]: w for c, w in zip(codes.tolist(), totals[codes].tolist(), strict=True)}

    def signatures(self) -> dict[str, str]:
        """Each node's hash of its (neighbour, weight) pairs: the sha1 of ``neighbour|repr(weight)``
        lines joined by newlines, in name order (what an update compares with the last one's)."""
        distinct, which = np.unique(self._weight, return_inverse=True)
        weights = pa.array([repr(w) for w in distinct.tolist()], pa.large_string()).take(pa.array(which))
        neighbours = pa.array(self.names, pa.large_string()).take(pa.array(self._neighbour))
        big = pa.large_string()
        pairs = pc.binary_join_element_wise(neighbours, weights, pa.scalar("|", big))
        lines = pc.binary_join_element_wise(pairs, pa.scalar("", big), pa.scalar("\n", big))
        offsets = np.frombuffer(lines.buffers()[1], np.int64)[lines.offset :][: len(lines) + 1]
        data = memoryview(lines.buffers()[2] or b"")
        bounds = offsets[self._starts].tolist()
        # Every node has an edge: each slice ends with a line's newline, which the join has not.
        return {
            name: hashlib.sha1(data[a : b - 1]).hexdigest()
            for name, (a, b) in zip(self.names, pairwise(bounds), strict=True)
        }
