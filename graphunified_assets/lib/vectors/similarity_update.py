"""The SIMILAR_TO choices of an update, from the last run's (`similarity_memory`): the choices
computing every row would give, at the cost of the rows that can have changed.

A chunk's top k among the others changes only when
* it is new, or its vector changed: its row is computed against every chunk;
* it had chosen a chunk that is gone (removed, or changed: its old vector is gone): its row is
  computed again, to refill its top k;
* a new or changed chunk now ranks at or above its k-th choice (or, while it has fewer than k,
  reaches the threshold): its old choices and those newcomers are ranked together. Its old choices
  are still its best among the chunks it saw, since none of them is gone.
Every other chunk keeps its choices. The newcomers' rows against every chunk, read by column, give
each old chunk's cosines with them (the products are symmetric), so the third kind costs no
products of its own. Cosines are compared exactly (`neighbour_choices`), kept or fresh.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from graphunified_assets.lib.vectors.similarity_memory import SimilarityMemory
from graphunified_query.core.indexes.neighbour_choices import Choices, ChunkSpace, candidates

# Above this share of rows to compute again, the caller computes every row. An update costs about
# that share of a full computation's products plus a fixed part (digests, the memory's read and
# write, ranking the kept choices): at 12.6K chunks, 0.4 s at 14 % of the rows, 0.8 s at 57 %, a
# full computation 1.0 s. Past half, what it saves is within a shared machine's noise.
FULL_SHARE = 0.5


def updated_choices(
    space: ChunkSpace, digests: np.ndarray, memory: SimilarityMemory, *, threshold: float, neighbours: int
) -> tuple[Choices, int] | None:
    """(the choices of every chunk of ``space``, how many rows were computed against every chunk),
    or None when too many would be (`FULL_SHARE`): ``memory`` must be of the same settings."""
    if pc.count_distinct(space.ids).as_py() != len(space):  # rows matched by id: one row each
        return None
    old_of_new, new_of_old = _matched(space.ids, digests, memory)
    fresh = np.flatnonzero(old_of_new < 0)
    old = memory.choices
    refilled = np.unique(old.chooser[new_of_old[old.chosen] < 0])  # old rows that chose a gone chunk
    refill = new_of_old[refilled]
    recompute = np.union1d(fresh, refill[refill >= 0])
    if len(recompute) > FULL_SHARE * len(space):
        return None
    stays = (new_of_old[old.chooser] >= 0) & ~np.isin(old.chooser, refilled)
    kept = Choices(new_of_old[old.chooser[stays]], new_of_old[old.chosen[stays]], old.similarity[stays])
    floor = _entry_floor(space, kept, threshold=threshold, neighbours=neighbours)
    floor[recompute] = np.inf  # their rows are computed whole
    is_fresh = np.zeros(len(space), bool)
    is_fresh[fresh] = True
    choosers, chosen = [], []
    for block, sims in space.blocks(recompute):
        rows, cols = candidates(space, block, sims, threshold=threshold, neighbours=neighbours)
        newcomers = block[is_fresh[block]]
        which, olds = np.nonzero(sims[is_fresh[block]] >= floor)  # by column: the old rows' cosines
        choosers += [rows, olds.astype(np.int64)]
        chosen += [cols, newcomers[which]]
    found = space.exact(np.concatenate(choosers), np.concatenate(chosen)) if choosers else Choices.none()
    merged = Choices.concat([kept, found]).best(space.id_rank, threshold=threshold, neighbours=neighbours)
    return merged, len(recompute)


def _matched(ids: pa.Array, digests: np.ndarray, memory: SimilarityMemory) -> tuple[np.ndarray, np.ndarray]:
    """(each row's position in ``memory`` or -1, each memory row's position now or -1): a row
    matches when its id and vector digest are the memory's."""
    at = pc.index_in(ids, value_set=memory.ids).fill_null(-1).to_numpy().astype(np.int64)
    same = at >= 0
    same[same] = memory.digests[at[same]] == digests[same]
    old_of_new = np.where(same, at, -1)
    new_of_old = np.full(len(memory.ids), -1, np.int64)
    new_of_old[old_of_new[same]] = np.flatnonzero(same)
    return old_of_new, new_of_old


def _entry_floor(space: ChunkSpace, kept: Choices, *, threshold: float, neighbours: int) -> np.ndarray:
    """Per row, the float32 cosine below which a newcomer cannot enter its choices (the margin
    under its k-th choice, or under the threshold while it has fewer than k)."""
    floor = np.full(len(space), float(np.float32(threshold)))
    counts = np.bincount(kept.chooser, minlength=len(space))
    worst = np.full(len(space), np.inf)
    np.minimum.at(worst, kept.chooser, kept.similarity.astype(np.float64))
    full = counts >= neighbours
    floor[full] = worst[full]
    return floor - space.margin
