"""The one order `chunk_vectors`' rows are read in, whatever order LanceDB holds them in.

A full build writes them document by document, in the order the documents were added; an update
deletes a changed document's rows and appends its new ones at the end, so the same rows can be
stored in another order. Readers whose results follow the row order (ties in dense and BM25
search go to the earlier row; PageRank's float sums follow its node order) sort them first: by
document id, then position in the document (then id, should two chunks share both).
"""

from __future__ import annotations

import pyarrow as pa

CHUNK_ORDER = (("document_id", "ascending"), ("chunk_index", "ascending"), ("id", "ascending"))


def in_chunk_order(rows: pa.Table) -> pa.Table:
    """``rows`` of `chunk_vectors` (with its document_id, chunk_index and id columns) sorted."""
    return rows.sort_by(list(CHUNK_ORDER))
