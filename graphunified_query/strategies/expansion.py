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
chunks, whose specificity is low anyway and whose fan-out would dominate the cost. An entity
in few chunks can still have hundreds of relationships: from each entity a hop follows at most
``per_hop`` related entities, its heaviest relationships first (as `graphrag_local` walks, by
`Snapshot.adjacency`), so a hub costs ``per_hop`` neighbours' chunks, not all of them.
An entity with no more than ``per_hop`` relationships is followed in full, in stored order,
exactly as without the cap.

A hop is computed for the whole frontier at once: every link of every frontier chunk becomes
one row of a few arrays (`Offers`), and the best path into each chunk is a sort, not a Python
loop over the thousands of chunks a question's neighbourhood reaches. Ties are broken as a
chunk-by-chunk walk would: the earlier frontier chunk, then the stronger link, then the link
offered first.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass

import numpy as np

from graphunified_query.snapshot.arrow_rows import column_of
from graphunified_query.snapshot.model import Snapshot
from graphunified_query.strategies.hipporag import UNSPECIFIC_TYPES

_ENTITY_FACTS = "expanded.entity_facts"  # snapshot.extras key
_NO_ENTITY = -1  # an Offers entity/other column without one: SIMILAR_TO has neither, MENTIONS no other
# Links offered together, as one row: (strength, entity, other entity, first, count, direct).
# direct = 1: one SIMILAR_TO link, to chunk row ``first``; direct = 0: a link to each of an
# entity's ``count`` chunk rows, from ``first`` on in `EntityFacts.chunk_rows`.
_Piece = tuple[float, int, int, int, int, int]


@dataclass(frozen=True)
class Reach:
    """The best path found into a chunk."""

    score: float  # the origin seed's vector score x the product of (strength x decay) along the path
    hop: int
    origin: int  # chunk row of the seed the path starts from
    via: str  # its last link: "similar_to", "mentions:<entity>" or "related_to:<e1> -> <e2>"


@dataclass(frozen=True)
class EntityFacts:
    """What a walk reads per entity row, as plain lists and one flat array: an Arrow row read costs
    microseconds and a hub's walk reads thousands. Built once per snapshot (`entity_facts`)."""

    ids: list[str]
    unspecific: list[bool]  # dates and other types that never bridge
    counts: list[int]  # live chunks mentioning it
    specificity: list[float]  # 1 / (1 + ln max(count, 1))
    starts: list[int]  # entity row → where its chunk rows begin in ``chunk_rows``
    chunk_rows: np.ndarray  # every entity's live chunk rows, one after the other


@dataclass(frozen=True)
class Offers:
    """Every link out of a frontier, in the order a chunk-by-chunk walk offers them."""

    source: np.ndarray  # index into the frontier rows
    target: np.ndarray  # chunk row linked to
    strength: np.ndarray
    entity: np.ndarray  # the link's entity row (_NO_ENTITY: SIMILAR_TO)
    other: np.ndarray  # RELATED_TO: the related entity row (_NO_ENTITY: otherwise)


class ChunkGraph:
    """The chunk-to-chunk links of one snapshot, restricted to ``allowed`` rows when given."""

    def __init__(
        self,
        snapshot: Snapshot,
        *,
        similarity_threshold: float,
        hub_limit: int,
        per_hop: int,
        allowed: Collection[int] | None = None,
    ) -> None:
        self.snapshot = snapshot
        self.similarity_threshold = similarity_threshold
        self.hub_limit = hub_limit
        self.per_hop = per_hop
        self.entities = entity_facts(snapshot)
        self._links: dict[int, list[_Piece]] = {}  # entity row → `_entity_links`
        self.allowed: np.ndarray | None = None
        if allowed is not None:
            self.allowed = np.zeros(len(snapshot.chunks.ids), bool)
            self.allowed[list(allowed)] = True

    def offers(self, rows: Sequence[int]) -> Offers:
        """The links out of each of ``rows``: a target is offered once per link that reaches it
        (its own row and rows outside ``allowed`` left out), strength > 0."""
        snap = self.snapshot
        similar = snap.chunk_similarity.adjacency if snap.chunk_similarity is not None else {}
        sources: list[int] = []  # per piece: the index of the frontier row offering it
        pieces: list[_Piece] = []
        for source, row in enumerate(rows):
            chunk_id = snap.chunks.ids[row]
            before = len(pieces)
            for neighbour, sim in similar.get(chunk_id, []):
                if sim < self.similarity_threshold:
                    break  # most similar first
                if neighbour in snap.chunk_row:
                    pieces.append((sim, _NO_ENTITY, _NO_ENTITY, snap.chunk_row[neighbour], 1, 1))
            for entity in snap.chunk_entities.get(chunk_id, []):
                if self._bridges(entity):
                    pieces.extend(self._entity_links(entity))
            sources.extend([source] * (len(pieces) - before))
        return self._spread(rows, sources, pieces)

    def _entity_links(self, entity: int) -> list[_Piece]:
        """The links through one entity: its chunks, then each followed related entity's chunks.
        Kept for the query: seeds and their neighbours often share entities."""
        found = self._links.get(entity)
        if found is not None:
            return found
        facts = self.entities
        specificity, starts, counts = facts.specificity[entity], facts.starts, facts.counts
        found = self._links[entity] = [(specificity, entity, _NO_ENTITY, starts[entity], counts[entity], 0)]
        adjacency, entity_id = self.snapshot.adjacency, facts.ids[entity]
        span = adjacency.span(entity_id)  # heaviest first; in full and in stored order, as uncapped:
        slots = adjacency.stored_slots(entity_id) if span.stop - span.start <= self.per_hop else span
        total = adjacency.total_weight(entity_id) or 1.0
        unspecific, entity_rows, hub_limit = facts.unspecific, adjacency.entity_count, self.hub_limit
        around = zip(adjacency.neighbour[slots].tolist(), adjacency.weight[slots].tolist(), strict=True)
        for other, weight in around:  # the hot loop of a hub: `_bridges` inlined
            if other >= entity_rows or unspecific[other] or counts[other] > hub_limit:
                continue
            if len(found) > self.per_hop:  # the entity's own piece and per_hop followed
                break
            strength = specificity * facts.specificity[other] * (0.5 + 0.5 * weight / total)
            found.append((strength, entity, other, starts[other], counts[other], 0))
        return found

    def _spread(self, rows: Sequence[int], sources: list[int], pieces: list[_Piece]) -> Offers:
        """One array row per link, in offer order: each piece repeated over its chunk rows."""
        table = np.array(pieces, np.float64).reshape(-1, 6)
        lengths = table[:, 4].astype(np.int64)
        links = np.repeat(table, lengths, axis=0)
        source = np.repeat(np.array(sources, np.int64), lengths)
        strength = links[:, 0]
        target = links[:, 3].astype(np.int64)  # SIMILAR_TO: the target; else where its rows start
        listed = links[:, 5] == 0
        offsets = np.arange(len(links)) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        target[listed] = self.entities.chunk_rows[target[listed] + offsets[listed]]
        keep = (target != np.asarray(rows, np.int64)[source]) & (strength > 0)
        if self.allowed is not None:
            keep &= self.allowed[target]
        entity, other = links[keep, 1].astype(np.int64), links[keep, 2].astype(np.int64)
        return Offers(source[keep], target[keep], strength[keep], entity, other)

    def describe(self, entity: int, other: int) -> str:
        """A link as results show it: "similar_to", "mentions:<entity>", "related_to:<e1> -> <e2>"."""
        entities = self.snapshot.entities
        if entity == _NO_ENTITY:
            return "similar_to"
        if other == _NO_ENTITY:
            return f"mentions:{entities[entity]['title']}"
        return f"related_to:{entities[entity]['title']} -> {entities[other]['title']}"

    def _bridges(self, entity: int) -> bool:
        facts = self.entities
        return not facts.unspecific[entity] and facts.counts[entity] <= self.hub_limit


def entity_facts(snapshot: Snapshot) -> EntityFacts:
    """The per-entity lists a walk reads (built once per snapshot)."""
    cached: EntityFacts | None = snapshot.extras.get(_ENTITY_FACTS)
    if cached is None:
        per_entity = [
            snapshot.chunk_rows(chunk_ids) for chunk_ids in column_of(snapshot.entities, "text_unit_ids")
        ]
        counts = [len(rows) for rows in per_entity]
        unspecific = [t in UNSPECIFIC_TYPES for t in column_of(snapshot.entities, "type")]
        specificity = [1.0 / (1.0 + math.log(max(n, 1))) for n in counts]
        starts = list(itertools.accumulate(counts, initial=0))[:-1]
        cached = snapshot.extras[_ENTITY_FACTS] = EntityFacts(
            ids=column_of(snapshot.entities, "id"),
            unspecific=unspecific,
            counts=counts,
            specificity=specificity,
            starts=starts,
            chunk_rows=np.fromiter((r for rows in per_entity for r in rows), np.int64, sum(counts)),
        )
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
        step = _Step(graph, frontier, decay)
        known = np.isin(step.target, np.fromiter([*seeds, *best], np.int64))
        frontier = {}
        for i in np.flatnonzero(known)[np.argsort(step.first_offer[known], kind="stable")]:
            row = int(step.target[i])  # in the order a walk first reached them
            if row not in best or float(step.score[i]) > best[row].score:
                best[row] = frontier[row] = step.reach(int(i), hop)
        fresh = np.flatnonzero(~known)
        fresh = fresh[np.lexsort((step.target[fresh], -step.score[fresh]))][: max(limit - admitted, 0)]
        for i in fresh:
            best[int(step.target[i])] = frontier[int(step.target[i])] = step.reach(int(i), hop)
            admitted += 1
        if not frontier:
            break
    return best


class _Step:
    """One hop from a frontier: the best path into each chunk it reaches (one entry per target,
    ordered by target row), and where each target was first offered."""

    def __init__(self, graph: ChunkGraph, frontier: dict[int, Reach], decay: float) -> None:
        self.graph = graph
        paths = list(frontier.values())
        offers = graph.offers(list(frontier))
        origin = np.array([p.origin for p in paths], np.int64)[offers.source]
        keep = offers.target != origin  # a path never returns to its origin
        source, target, strength = offers.source[keep], offers.target[keep], offers.strength[keep]
        score = np.array([p.score for p in paths], np.float64)[source] * strength * decay
        # Highest score, then the earlier frontier chunk, the stronger link, the link offered
        # first: the path a walk keeping the first of equals would keep.
        ranked = np.lexsort((np.arange(len(target)), -strength, source, -score, target))
        changes = np.flatnonzero(np.diff(target[ranked])) + 1
        winners = ranked[np.concatenate([[0], changes])] if len(ranked) else ranked
        self.target, self.first_offer = np.unique(target, return_index=True)  # aligned with winners
        self.score = score[winners]
        self.origin = origin[keep][winners]
        self.entity = offers.entity[keep][winners]
        self.other = offers.other[keep][winners]

    def reach(self, i: int, hop: int) -> Reach:
        via = self.graph.describe(int(self.entity[i]), int(self.other[i]))
        return Reach(float(self.score[i]), hop, int(self.origin[i]), via)
