"""Hierarchical Leiden that an update re-runs only where the graph changed.

GraphRAG's recipe: Leiden over the whole graph gives level 0, and every community larger than
``max_cluster_size`` is split by Leiden on its own subgraph into the next level, down to
``max_level``. It is written out here rather than called as graspologic-native's
``hierarchical_leiden`` because that one draws every split from one random stream: a single new
edge anywhere shifts the stream and re-splits every large community, and a warm start does not
help either (Leiden keeps optimizing and moves nodes the change never reached).

Here an update keeps, at every level, each previous community, without its changed members, that
still lies wholly inside its new parent; the rest of the parent, the *region* (new and changed
nodes), is placed among them by modularity local moves (`local_moves.py`), and only a parent with
nothing kept (new, or mostly changed) goes through Leiden. A change therefore remakes the
communities its nodes leave or join and nothing else, so every other community keeps its members,
its content hash and its report.

A member *changed* when its (neighbour, weight) pairs did and its total edge weight moved more
than ``MATERIAL_SHARE`` from what it was when Leiden last placed it. A passage names a few
entities that are already hubs (a country, a university): each gains an edge or two among
hundreds, which cannot move it between communities, yet re-clustering the hub's community at
every level remade 150-370 of the 12.6K home's 15.3K communities, and their reports, per added
passage. Measured from the weight at the last placement, not the last update, the drift a kept
node carries stays under that share however many updates add to it. A removed node leaves its
communities, which keep the rest of their members.

Locality drifts from the global optimum over many updates; a run without a previous clustering
is a cold rebuild that resets it, and so is any split where over half of the parent's members
changed.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field

import graspologic_native as gn
import pyarrow as pa

from graphunified_assets.lib.collector import collector_paused
from graphunified_assets.lib.graph.local_moves import place
from graphunified_assets.lib.graph.weighted_graph import Edge, WeightedGraph

# Sidecar of the `communities` asset: what the next update compares against.
CLUSTERING_SCHEMA = pa.schema(
    [
        pa.field("entity_id", pa.string(), nullable=False),
        pa.field("path", pa.list_(pa.int64()), nullable=False),
        pa.field("edge_signature", pa.string(), nullable=False),
        pa.field("placed_weight", pa.float64(), nullable=False),
    ]
)
# Before placed weights were kept: read, every changed signature counts (one update, then this).
_UNWEIGHTED_SCHEMA = pa.schema(list(CLUSTERING_SCHEMA)[:3])
_PARAMETERS = b"leiden_parameters"  # the key in the state's Parquet metadata
# A node's total edge weight may move this share from its last placement before it is re-placed.
MATERIAL_SHARE = 0.1


@dataclass(frozen=True)
class LeidenParameters:
    max_cluster_size: int
    max_level: int
    resolution: float
    seed: int


@dataclass(frozen=True)
class Community:
    key: tuple[int, int]  # (level, cluster id unique within the level) before renumbering
    level: int
    parent_key: tuple[int, int] | None
    entity_ids: tuple[str, ...]


@dataclass(frozen=True)
class Clustering:
    """What the next update needs from this one."""

    paths: dict[str, tuple[int, ...]]  # node → its cluster id at each level it belongs to
    edge_signatures: dict[str, str]  # node → hash of its (neighbour, weight) pairs
    placed_weights: dict[str, float]  # node → its total edge weight when Leiden last placed it

    def members(self) -> dict[tuple[int, int], set[str]]:
        out: dict[tuple[int, int], set[str]] = defaultdict(set)
        for node, path in self.paths.items():
            for level, cluster in enumerate(path):
                out[(level, cluster)].add(node)
        return out


# Each re-clustered node's edges: many small objects, no cycles (communities: 1.9 s of collections at 12.6K).
@collector_paused()
def detect_communities(
    edges: pa.Table, parameters: LeidenParameters, *, previous: Clustering | None = None
) -> tuple[list[Community], Clustering]:
    """Communities up to ``max_level`` of the relationships ``edges`` (`WeightedGraph`'s
    columns); entities without any relationship belong to none."""
    graph = WeightedGraph(edges)
    if not graph:
        return [], Clustering({}, {}, {})
    signatures = graph.signatures()
    run = _Run(graph, parameters, previous, signatures)
    run.partition(graph.names, level=0, parent_key=None)
    communities = sorted(run.found, key=lambda c: (c.level, c.entity_ids[0]))
    paths = {node: tuple(path) for node, path in run.paths.items()}
    return communities, Clustering(paths, signatures, run.placed_weights())


def clustering_table(clustering: Clustering) -> pa.Table:
    nodes = sorted(clustering.edge_signatures)
    return pa.table(
        {
            "entity_id": nodes,
            "path": [list(clustering.paths.get(n, ())) for n in nodes],
            "edge_signature": [clustering.edge_signatures[n] for n in nodes],
            "placed_weight": [clustering.placed_weights[n] for n in nodes],
        },
        schema=CLUSTERING_SCHEMA,
    )


def parameters_metadata(parameters: LeidenParameters) -> dict[bytes, bytes]:
    """What the clustering state records of the settings it was made with."""
    return {_PARAMETERS: json.dumps(asdict(parameters), sort_keys=True).encode()}


def previous_clustering(state: pa.Table | None, parameters: LeidenParameters) -> Clustering | None:
    """The clustering an update starts from: the state's, unless it was made with other settings
    (another resolution, seed or size: every community is made again, as they ask). A state from
    before the settings were recorded is taken as made with these."""
    if state is None:
        return None
    recorded = (state.schema.metadata or {}).get(_PARAMETERS)
    if recorded is not None and json.loads(recorded) != asdict(parameters):
        return None
    return read_clustering(state)


def read_clustering(table: pa.Table | None) -> Clustering | None:
    """None (a cold rebuild) for a missing table or one written under an older schema; one
    written before placed weights has none (every changed signature counts)."""
    if table is None or table.num_rows == 0 or table.schema not in (CLUSTERING_SCHEMA, _UNWEIGHTED_SCHEMA):
        return None
    rows = table.to_pydict()
    weights = rows.get("placed_weight")
    return Clustering(
        {n: tuple(p) for n, p in zip(rows["entity_id"], rows["path"], strict=True)},
        dict(zip(rows["entity_id"], rows["edge_signature"], strict=True)),
        {} if weights is None else dict(zip(rows["entity_id"], weights, strict=True)),
    )


@dataclass
class _Run:
    graph: WeightedGraph
    parameters: LeidenParameters
    previous: Clustering | None
    signatures: Mapping[str, str]
    found: list[Community] = field(default_factory=list)
    paths: dict[str, list[int]] = field(default_factory=lambda: defaultdict(list))

    def __post_init__(self) -> None:
        previous = self.previous or Clustering({}, {}, {})
        self.previous_paths: Mapping[str, tuple[int, ...]] = previous.paths  # empty on a cold build
        self.strengths = self.graph.strengths()
        self.previous_weights = previous.placed_weights
        gone = set(previous.edge_signatures) - set(self.signatures)
        self.previous_members = {key: ids - gone for key, ids in previous.members().items()}
        self.changed = {
            n
            for n, sig in self.signatures.items()
            if previous.edge_signatures.get(n) != sig and self._moved(n)
        }
        self.placed: set[str] = set()  # nodes Leiden placed at the top level this run
        self.next_id: dict[int, int] = defaultdict(int)
        for level, cluster in self.previous_members:
            self.next_id[level] = max(self.next_id[level], cluster + 1)

    def _moved(self, node: str) -> bool:
        """Whether ``node``'s total edge weight moved more than ``MATERIAL_SHARE`` from its last
        placement (a node never placed, or of a state without weights, has)."""
        placed = self.previous_weights.get(node)
        if placed is None:
            return True
        now = self.strengths[node]
        return abs(now - placed) > MATERIAL_SHARE * max(now, placed)

    def placed_weights(self) -> dict[str, float]:
        """Each node's weight at its last top-level placement: this run's, or the one it keeps."""
        return {
            node: self.strengths[node]
            if node in self.placed or node not in self.previous_weights
            else self.previous_weights[node]
            for node in self.signatures
        }

    def partition(self, members: list[str], *, level: int, parent_key: tuple[int, int] | None) -> None:
        """Record ``members``' communities at ``level``, then split each too-large one a level down."""
        groups = self._assign(members, level)
        if level > 0 and len(groups) < 2:
            return  # Leiden found no split: the parent is a leaf
        for cluster, ids in sorted(groups.items()):
            key = (level, cluster)
            self.found.append(Community(key, level, parent_key, tuple(sorted(ids))))
            for node in ids:
                self.paths[node].append(cluster)
        for cluster, ids in sorted(groups.items()):
            if len(ids) > self.parameters.max_cluster_size and level < self.parameters.max_level:
                self.partition(sorted(ids), level=level + 1, parent_key=(level, cluster))

    def _assign(self, members: list[str], level: int) -> dict[int, list[str]]:
        inside = set(members)
        kept = {
            cluster: sorted(stay)
            for cluster in {self.previous_paths[n][level] for n in members if self._has_level(n, level)}
            if (stay := self.previous_members[(level, cluster)] - self.changed) and stay <= inside
        }
        region = inside.difference(*map(set, kept.values()))
        if not region:
            return kept
        if 2 * len(inside & self.changed) > len(members):
            kept, region = {}, inside  # mostly changed: a cold split, as a first build would do
        if level == 0:
            self.placed |= region
        if kept:  # the kept communities stay as they are: only the region's nodes move
            placed, fresh = place(self.graph, inside, kept, region, resolution=self.parameters.resolution)
            for ids in fresh:
                placed[self._fresh(level)] = ids
            return placed
        edges = sorted(
            e for node in region for e in self.graph.edges_of(node) if e[0] < e[1] and e[1] in region
        )
        if not edges and level > 0:
            return {}  # no edge inside the parent: nothing to split along
        local = self._leiden(edges) if edges else {}
        groups: dict[int, list[str]] = {}
        first = self.next_id[level]
        for node, cluster in local.items():
            groups.setdefault(first + cluster, []).append(node)
        self.next_id[level] = first + max(local.values(), default=-1) + 1
        for node in sorted(region - set(local)):
            groups[self._fresh(level)] = [node]  # no edge inside the parent: a community of its own
        return groups

    def _has_level(self, node: str, level: int) -> bool:
        return len(self.previous_paths.get(node, ())) > level

    def _fresh(self, level: int) -> int:
        self.next_id[level] += 1
        return self.next_id[level] - 1

    def _leiden(self, edges: list[Edge]) -> dict[str, int]:
        _, assignment = gn.leiden(edges, resolution=self.parameters.resolution, seed=self.parameters.seed)
        return assignment
