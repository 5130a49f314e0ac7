"""What the last `chunk_similarity` run chose, kept so that an update recomputes only what can change.

The stored edges are the symmetric union of the chunks' choices, which an update cannot take apart:
an edge holds while either end chose the other, so each chunk's own top-k is needed. One row per
chunk of that run: its id, a digest of the vector it was compared by (a chunk re-embedded under the
same id is a changed one), and its choices, best first, as positions of rows in this file.

A cache: made under other settings (threshold, neighbours, model, dimension), torn, missing or
inconsistent, it loads as None and the step computes every row, as a first build does.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from graphunified_query.core.indexes.neighbour_choices import Choices
from graphunified_query.core.stores.parquet import write_table_atomic

SIMILARITY_MEMORY = "chunk_similarity_choices.parquet"  # in the home's cache folder
_VERSION = "1"


@dataclass(frozen=True)
class SimilarityMemory:
    ids: pa.Array  # strings, a row per chunk of the run
    digests: np.ndarray  # uint64, `vector_digests` of the vectors it was compared by
    choices: Choices  # positions in ``ids``, sorted by chooser, best first

    def save(self, path: Path, key: Mapping[str, str]) -> None:
        """Atomically; not fsynced: lost to a power cut, the next run computes every row."""
        counts = np.bincount(self.choices.chooser, minlength=len(self.ids))
        offsets = pa.array(np.concatenate([[0], np.cumsum(counts)]), pa.int32())
        table = pa.table(
            {
                "id": self.ids,
                "digest": pa.array(self.digests, pa.uint64()),
                "chosen": pa.ListArray.from_arrays(offsets, pa.array(self.choices.chosen, pa.int32())),
                "similarity": pa.ListArray.from_arrays(
                    offsets, pa.array(self.choices.similarity, pa.float32())
                ),
            }
        )
        write_table_atomic(path, table.replace_schema_metadata(_metadata(key)), durable=False)

    @classmethod
    def load(cls, path: Path, key: Mapping[str, str]) -> SimilarityMemory | None:
        """The memory saved under ``key``; None when missing, torn, inconsistent or another key's."""
        try:
            table = pq.read_table(path)
            if table.schema.metadata != _metadata(key):
                return None
            return _checked(table)
        except Exception:  # any damage: a cache, computed again
            return None


def vector_digests(vectors: np.ndarray) -> np.ndarray:
    """A 64-bit digest of each row's float32 bytes: equal digests, the same vector."""
    matrix = np.ascontiguousarray(vectors, np.float32)
    width = matrix.shape[1] * matrix.itemsize
    data = matrix.reshape(-1).view(np.uint8).data
    digests = b"".join(
        hashlib.blake2b(data[i * width : (i + 1) * width], digest_size=8).digest() for i in range(len(matrix))
    )
    return np.frombuffer(digests, np.uint64).copy()


def _metadata(key: Mapping[str, str]) -> dict[bytes, bytes]:
    return {k.encode(): v.encode() for k, v in {**key, "version": _VERSION}.items()}


def _checked(table: pa.Table) -> SimilarityMemory | None:
    if any(column.null_count for column in table.columns):
        return None
    ids, chosen, similarity = (table.column(name).combine_chunks() for name in ("id", "chosen", "similarity"))
    if pc.count_distinct(ids).as_py() != len(ids):
        return None
    counts = pc.list_value_length(chosen).to_numpy(zero_copy_only=False)
    if not np.array_equal(counts, pc.list_value_length(similarity).to_numpy(zero_copy_only=False)):
        return None
    targets = chosen.flatten().to_numpy(zero_copy_only=False).astype(np.int64)
    if len(targets) and (targets.min() < 0 or targets.max() >= len(ids)):
        return None
    choices = Choices(
        np.repeat(np.arange(len(ids), dtype=np.int64), counts.astype(np.int64)),
        targets,
        similarity.flatten().to_numpy(zero_copy_only=False).astype(np.float32),
    )
    digests = table.column("digest").to_numpy().astype(np.uint64)
    return SimilarityMemory(ids.cast(pa.string()), digests, choices)
