"""Breadth- or depth-first walks out of the seed entities, with scores decaying per hop.

An entity reached at depth ``d`` from a seed scores ``seed_score * decay**d``. Each entity is
visited once, by whichever walk reaches it first:

- ``bfs`` goes level by level (best-scored parents first), so every entity gets its shortest hop
  distance from the seeds: the neighbourhood, evenly.
- ``dfs`` follows one chain of relationships (strongest edge first) out to ``max_hops`` before
  backtracking. An entity is scored along the path DFS first reached it by, which may be longer
  than the shortest one; under a ``max_nodes`` budget it reaches further along chains than BFS.

``max_nodes`` bounds the visits, seeds included: more seeds than that keeps the best ones.
Entities scoring below ``min_score`` are neither kept nor expanded: their descendants would score
lower still along that path (they may still be reached along a better one).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

Traversal = Literal["bfs", "dfs"]
TRAVERSALS: tuple[Traversal, ...] = ("bfs", "dfs")
# entity id -> [(neighbour id, relationship row)] in the order a walk should try them
Neighbours = Callable[[str], Sequence[tuple[str, int]]]


@dataclass(frozen=True)
class Visit:
    entity: str
    score: float
    depth: int
    via: str | None  # the entity it was reached from (None for a seed)
    edge: int | None  # the relationship row it was reached along
    seed: str  # the seed the walk started from
    seed_score: float
    order: int  # position in visit order


class _Walk:
    def __init__(self, neighbours: Neighbours, decay: float, min_score: float, max_nodes: int) -> None:
        self.neighbours = neighbours
        self.decay = decay
        self.min_score = min_score
        self.max_nodes = max_nodes
        self.visits: dict[str, Visit] = {}

    @property
    def full(self) -> bool:
        return len(self.visits) >= self.max_nodes

    def add(self, entity: str, parent: Visit | None, edge: int | None, seed_score: float) -> Visit:
        depth = 0 if parent is None else parent.depth + 1
        visit = Visit(
            entity=entity,
            # From the seed's score, not the parent's: exactly seed_score * decay**depth.
            score=seed_score * self.decay**depth,
            depth=depth,
            via=None if parent is None else parent.entity,
            edge=edge,
            seed=entity if parent is None else parent.seed,
            seed_score=seed_score,
            order=len(self.visits),
        )
        self.visits[entity] = visit
        return visit

    def children(self, parent: Visit, reserved: set[str]) -> list[tuple[str, int]]:
        """Unvisited neighbours worth a visit, in the order given by `neighbours`."""
        if parent.seed_score * self.decay ** (parent.depth + 1) < self.min_score:
            return []  # every child would fall below min_score along this path
        return [
            (n, rel)
            for n, rel in self.neighbours(parent.entity)
            if n not in self.visits and n not in reserved
        ]


def traverse(
    seeds: Sequence[tuple[str, float]],
    neighbours: Neighbours,
    *,
    method: Traversal = "bfs",
    max_hops: int = 2,
    decay: float = 0.7,
    min_score: float = 0.0,
    max_nodes: int = 50,
) -> list[Visit]:
    """The visits in visit order, seeds (best first) at depth 0."""
    if method not in TRAVERSALS:
        raise ValueError(f"traversal {method!r} is not one of {', '.join(TRAVERSALS)}")
    walk = _Walk(neighbours, decay, min_score, max(max_nodes, 1))
    ordered: dict[str, float] = {}
    for entity, score in sorted(seeds, key=lambda s: -s[1]):
        if score >= min_score and entity not in ordered and len(ordered) < walk.max_nodes:
            ordered[entity] = score  # the best seeds within the budget: the rest are never visited
    if method == "bfs":
        _bfs(walk, ordered, max_hops)
    else:
        _dfs(walk, ordered, max_hops)
    return sorted(walk.visits.values(), key=lambda v: v.order)


def _bfs(walk: _Walk, seeds: dict[str, float], max_hops: int) -> None:
    frontier = [walk.add(entity, None, None, score) for entity, score in seeds.items()]
    for _ in range(max_hops):
        reached: list[Visit] = []
        for parent in frontier:
            for entity, edge in walk.children(parent, set()):
                if walk.full:
                    return
                if entity not in walk.visits:  # an earlier parent of this level may have taken it
                    reached.append(walk.add(entity, parent, edge, parent.seed_score))
        # Best-scored parents expand first, so a shared neighbour hangs off the better seed.
        frontier = sorted(reached, key=lambda v: (-v.score, v.order))
        if not frontier:
            return


def _dfs(walk: _Walk, seeds: dict[str, float], max_hops: int) -> None:
    # Seeds are reserved up front: one seed is never reached as another's descendant, at a lower score.
    reserved = set(seeds)

    def descend(parent: Visit) -> None:
        if parent.depth >= max_hops:
            return
        for entity, edge in walk.children(parent, reserved):
            if (
                len(walk.visits) + len(reserved) >= walk.max_nodes
            ):  # the seeds still to come keep their places
                return
            if entity not in walk.visits:  # a deeper branch may have reached it meanwhile
                descend(walk.add(entity, parent, edge, parent.seed_score))

    for entity, score in seeds.items():
        reserved.discard(entity)
        descend(walk.add(entity, None, None, score))
