"""Link expansion: each chunk hit pulls in a few chunks it links to or continues into.

Hits are taken best first; each adds at most ``per_hit`` new chunks and the query at most
``total``, scored below the hit that pulled them (``decay`` times it; a negative score, an MMR
margin, moves further down, not up), with ``expanded_from`` (the hit's chunk id) and
``expanded_via`` in their metadata. They come back beside the hits, never in their places.
Only chunk hits expand (an entity or report context is a summary, not a passage with
neighbours) and only one hop: expanded chunks pull in nothing. A neighbour already among the
hits, or refused by ``admit`` (the query's filters), is skipped without using up the caps.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from graphunified_query.context.links import LinkGraph
from graphunified_query.snapshot.model import Snapshot
from graphunified_query.strategies.contexts import chunk_result
from graphunified_query.strategies.results import RetrievalResult

# A candidate context, and what the query's filters make of it: the (marked) context or None.
Admit = Callable[[RetrievalResult], RetrievalResult | None]


def expand(
    hits: Sequence[RetrievalResult],
    snapshot: Snapshot,
    graph: LinkGraph,
    *,
    admit: Admit,
    per_hit: int,
    total: int,
    decay: float,
) -> tuple[RetrievalResult, ...]:
    """The chunks the hits pull in (not the hits themselves), best hit's first."""
    present = {h.chunk_id for h in hits if h.kind == "chunk" and h.chunk_id}
    added: list[RetrievalResult] = []
    for hit in sorted((h for h in hits if h.kind == "chunk"), key=lambda h: -h.score):
        row = snapshot.chunk_row.get(hit.chunk_id or "")
        if row is None:
            continue
        pulled = 0
        for neighbour, via in graph.of(row):
            if pulled >= per_hit or len(added) >= total:
                break
            chunk_id = snapshot.chunks.ids[neighbour]
            if chunk_id in present:
                continue
            candidate = chunk_result(
                snapshot, neighbour, decayed(hit.score, decay), expanded_from=hit.chunk_id, expanded_via=via
            )
            admitted = admit(candidate)
            if admitted is None:
                continue
            present.add(chunk_id)
            added.append(admitted)
            pulled += 1
        if len(added) >= total:
            break
    return tuple(added)


def decayed(score: float, decay: float) -> float:
    """``score`` lowered by the share ``1 - decay`` of its size: ``decay x score`` when positive,
    further below zero when negative (0.9 x -0.2 = -0.18 would rank the neighbour above its hit)."""
    return score - abs(score) * (1.0 - decay)
