"""Graph expansion over chunks: from vector seeds along the links between passages.

Two chunks are linked (one hop) when

- SIMILAR_TO: their vectors are close (a stored kNN edge); strength = their cosine;
- they MENTION the same entity e; strength = specificity(e) = 1 / (1 + ln m_e), m_e being the
  chunks that mention e (an entity in two chunks ties them far more than one in two hundred);
- one mentions e1 and the other e2, with e1 RELATED_TO e2; strength = specificity(e1) x
  specificity(e2) x (0.5 + 0.5 x the relationship's share of e1's relationship weight), the last
  factor as `graphrag_local` weighs a step along a relationship. Both ends count: a passage
  saying "American" relates, through that word, to every American in the corpus.

A pair's strength is the best of its links. Dates never bridge (like HippoRAG's seeds: "1889"
ties together passages that share nothing else), nor do entities in more than ``hub_limit``
chunks, whose specificity is low anyway and whose fan-out would dominate the cost.
"""

from __future__ import annotations

import math
from collections.abc import Collection
from dataclasses import dataclass

from graphunified_query.retrieval.hipporag import UNSPECIFIC_TYPES
from graphunified_query.snapshot import Snapshot

_ENTITY_CHUNKS = "expanded.entity_chunk_rows"  # snapshot.extras key


@dataclass(frozen=True)
class Reach:
    """The best path found into a chunk."""

    score: float  # the origin seed's vector score x the product of (strength x decay) along the path
    hop: int
    origin: int  # chunk row of the seed the path starts from
    via: str  # its last link: "similar_to", "mentions:<entity>" or "related_to:<e1> -> <e2>"


class ChunkGraph:
    """The chunk-to-chunk links of one snapshot, restricted to ``allowed`` rows when given."""

    def __init__(
        self,
        snapshot: Snapshot,
        *,
        similarity_threshold: float,
        hub_limit: int,
        allowed: Collection[int] | None = None,
    ) -> None:
        self.snapshot = snapshot
        self.similarity_threshold = similarity_threshold
        self.hub_limit = hub_limit
        self.allowed = allowed
        self.entity_chunks = entity_chunk_rows(snapshot)

    def links(self, row: int) -> dict[int, tuple[float, str]]:
        """target chunk row → (strength, via) of the strongest link from ``row``."""
        snap = self.snapshot
        chunk_id = snap.chunks.ids[row]
        best: dict[int, tuple[float, str]] = {}

        def offer(targets: Collection[int], strength: float, via: str) -> None:
            for target in targets:
                if target == row or (self.allowed is not None and target not in self.allowed):
                    continue
                if strength > best.get(target, (0.0, ""))[0]:
                    best[target] = (strength, via)

        if snap.chunk_similarity is not None:
            for neighbour, sim in snap.chunk_similarity.adjacency.get(chunk_id, []):
                if sim < self.similarity_threshold:
                    break  # most similar first
                if neighbour in snap.chunk_row:
                    offer((snap.chunk_row[neighbour],), sim, "similar_to")
        for entity in snap.chunk_entities.get(chunk_id, []):
            if not self._bridges(entity):
                continue
            title = snap.entities[entity]["title"]
            specificity = self._specificity(entity)
            offer(self.entity_chunks[entity], specificity, f"mentions:{title}")
            relations = snap.neighbours.get(snap.entities[entity]["id"], [])
            total = sum(snap.relationships[r]["weight"] for _, r in relations) or 1.0
            for neighbour_id, rel in relations:
                other = snap.entity_row.get(neighbour_id)
                if other is None or not self._bridges(other):
                    continue
                share = snap.relationships[rel]["weight"] / total
                strength = specificity * self._specificity(other) * (0.5 + 0.5 * share)
                via = f"related_to:{title} -> {snap.entities[other]['title']}"
                offer(self.entity_chunks[other], strength, via)
        return best

    def _bridges(self, entity: int) -> bool:
        return (
            self.snapshot.entities[entity]["type"] not in UNSPECIFIC_TYPES
            and len(self.entity_chunks[entity]) <= self.hub_limit
        )

    def _specificity(self, entity: int) -> float:
        return 1.0 / (1.0 + math.log(max(len(self.entity_chunks[entity]), 1)))


def entity_chunk_rows(snapshot: Snapshot) -> list[tuple[int, ...]]:
    """For each entity row, the live chunk rows that mention it (built once per snapshot)."""
    cached = snapshot.extras.get(_ENTITY_CHUNKS)
    if cached is None:
        cached = [tuple(snapshot.chunk_rows(e["text_unit_ids"])) for e in snapshot.entities]
        snapshot.extras[_ENTITY_CHUNKS] = cached
    return cached


def expand(
    graph: ChunkGraph, seeds: dict[int, float], *, depth: int, decay: float, limit: int
) -> dict[int, Reach]:
    """The best path of at most ``depth`` hops into each chunk reached from the seeds.

    A path never returns to its own origin, so a seed's entry means another seed reaches it.
    Non-seed chunks are admitted hop by hop, best first, until ``limit`` of them are in; a chunk
    already in keeps improving when a better path reaches it later.
    """
    best: dict[int, Reach] = {}
    frontier = {row: Reach(score, 0, row, "seed") for row, score in seeds.items()}
    admitted = 0
    for hop in range(1, depth + 1):
        reached: dict[int, Reach] = {}
        for row, path in frontier.items():
            for target, (strength, via) in graph.links(row).items():
                if target == path.origin:
                    continue
                score = path.score * strength * decay
                if target not in reached or score > reached[target].score:
                    reached[target] = Reach(score, hop, path.origin, via)
        frontier = {}
        fresh = []
        for target, path in reached.items():
            if target in seeds or target in best:
                if target not in best or path.score > best[target].score:
                    best[target] = frontier[target] = path
            else:
                fresh.append((target, path))
        fresh.sort(key=lambda item: (-item[1].score, item[0]))
        for target, path in fresh[: max(limit - admitted, 0)]:
            best[target] = frontier[target] = path
            admitted += 1
        if not frontier:
            break
    return best
