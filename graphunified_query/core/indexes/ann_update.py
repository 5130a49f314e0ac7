"""An update of a faiss index (`ann.py`): its rows changed by id in the delta beside its base.

Before the delta, an update of the 12.6K-passage home read the whole 0.5-GB relationship index
(~1.0 s), removed and added its few thousand rows by id and wrote it whole again (~0.45 s). Now it
maps the base read-only, reads which keys it holds from its lists, and changes only the delta
(`ann_delta.py`): the base is read and written whole only when the delta is folded into it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import cast

import faiss
import numpy as np

from graphunified_query.core.indexes.ann import AnnIndex, ids_digest, read_base, row_keys
from graphunified_query.core.indexes.ann_delta import Delta

# Re-trained (`graph_vectors._clustered`) once the table has moved 10 % from the rows its lists were
# trained on: its k-means lists fit the table less as it grows or shrinks.
RETRAIN_SHARE = 0.1
# An update folds its delta into the base once the delta's added (or removed) rows pass 5 % of
# the base's. Every query scans the added rows exactly and skips the removed ones in the base: at
# 5 % of 316K rows, 2.8 ms more on a 14-ms query (measured with 15.8K rows out and 15.8K in). A
# fold costs what every update cost before the delta (~1 s, the base read and written whole); a
# 12.6K-passage update's ~2,300 rows in and out pay it every seventh update, and a query pays
# half the threshold's cost on average.
FOLD_SHARE = 0.05


def updated(
    previous: AnnIndex, ids: Sequence[str], removed: Iterable[str], added: dict[str, np.ndarray]
) -> AnnIndex | None:
    """``previous`` with the ``removed`` ids taken out and ``added`` (id → vector) put in: the
    index of ``ids``, its base unchanged and the change in its delta, or the delta folded into the
    base once it passes ``FOLD_SHARE`` of it. None when it must be re-trained: the table moved
    ``RETRAIN_SHARE`` from the size it was trained at, or the result does not hold exactly ``ids``."""
    if abs(len(ids) - previous.trained_rows) > RETRAIN_SHARE * previous.trained_rows:
        return None
    keys = row_keys(added)
    gone = np.concatenate([row_keys(removed), keys])  # an added id already held gets its new vector
    in_base = gone[_among(gone, _base_keys(previous.index))] if len(gone) else gone
    vectors = np.zeros((0, previous.index.d), np.float32)
    if added:
        vectors = np.stack(list(added.values())).astype(np.float32)
    delta = previous.delta.changed(gone, in_base, keys, vectors)
    found = AnnIndex(previous.index, ids_digest(ids), previous.trained_rows, delta, previous.source)
    if len(found) != len(ids):
        return None  # a row neither kept nor added: the saved index was not what we think
    if delta.size > FOLD_SHARE * previous.index.ntotal:
        return _folded(found)
    return found


def _folded(ann: AnnIndex) -> AnnIndex:
    """``ann`` with its delta put into its base, read whole into memory (a memory-mapped base is
    read-only): what every update cost before the delta."""
    # A base held in memory may be another AnnIndex's too: changed in a copy.
    if ann.source is None:
        index = cast(faiss.IndexIVFFlat, faiss.clone_index(ann.index))  # clone_index keeps the class
    else:
        index = read_base(ann.source, mapped=False)
    if len(ann.delta.removed):
        index.remove_ids(faiss.IDSelectorBatch(ann.delta.removed))
    if len(ann.delta.keys):
        index.add_with_ids(ann.delta.vectors, ann.delta.keys)
    return AnnIndex(index, ann.ids_digest, ann.trained_rows, Delta.empty(index.d))


def _base_keys(index: faiss.IndexIVFFlat) -> np.ndarray:
    """The keys the base holds, sorted, read from its lists: 20 ms for 316K rows through the
    memory map (its ids only, 2.5 MB of the 491-MB file)."""
    assert index.invlists is not None  # a trained IndexIVFFlat owns its lists
    lists = index.invlists
    found = [np.zeros(0, np.int64)]
    for number in range(index.nlist):
        if size := lists.list_size(number):
            found.append(faiss.rev_swig_ptr(lists.get_ids(number), size))
    return np.sort(np.concatenate(found))


def _among(keys: np.ndarray, sorted_keys: np.ndarray) -> np.ndarray:
    """Which ``keys`` are in ``sorted_keys``, by binary search: np.isin hashes all 316K base keys
    (0.2 s)."""
    if not len(sorted_keys):
        return np.zeros(len(keys), bool)
    at = np.searchsorted(sorted_keys, keys).clip(max=len(sorted_keys) - 1)
    return np.asarray(sorted_keys[at] == keys)
