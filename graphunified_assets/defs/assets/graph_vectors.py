"""`graph_vectors`: LanceDB indexes of entities, relationships and facts for the graph retrievers.

Each table streams through in slices of ``SLICE_ROWS``: rows are read, embedded (each distinct
text once; unchanged texts from the embedding cache) and written to LanceDB slice by slice, so the
step holds one slice's Python rows and vectors instead of every row of the three tables (the
12.6K-passage build's peak). A table large enough for a faiss index gets it from its stored
vectors afterwards, a slice at a time (`_clustered`).

An update (same model and composition settings as the manifest records) writes slices instead:
only new and changed rows are computed, and the table gets one delete and one append
(`lib/lance_slices.py`). The manifest records the newest row (`indexed_at`) each table's last
commit read; `graph_elements` carries unchanged rows over with their time, so only the rows made
since have their text composed and compared with the stored one, and the others' ids are checked
(2.3K of 316K relationships when one passage is added at 12.6K passages). Without that record (a
commit that stopped part-way forgets it first) every row's text is compared.
The faiss index of a large table records the stale rows and the computed ones in the small delta
beside its base, which is rewritten only once the delta passes 5 % of it
(`core/indexes/ann_update.py`); it is re-trained only once the table has moved 10 % from its size.

The rows to compute are split by table, then by rows, into shards (`lib/vectors/shard_staging.py`)
that run as parallel steps (`sharded.py`): one plans, each shard embeds its rows (its distinct
texts in one sorted pass) and stages them in the home, one commit writes the tables, their faiss
indexes and the manifest. A shard that fails leaves the tables as they were.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import dagster as dg
import lancedb
import numpy as np
import pyarrow as pa

from graphunified_assets.defs.assets.sharded import ShardCounts, ShardedOps, ShardedStep, per_table
from graphunified_assets.defs.executors import MODELS_POOL
from graphunified_assets.defs.observability import Metadata
from graphunified_assets.defs.partitions import after_documents_change
from graphunified_assets.defs.resources import GraphUnifiedResource
from graphunified_assets.lib.graph.graph_seen import newest_row, recent_rows
from graphunified_assets.lib.vectors.composed_vectors import (
    ENTITY_EXPONENT,
    NAME_WEIGHT,
    description_vectors,
    entity_pieces,
    entity_vectors,
)
from graphunified_assets.lib.vectors.distinct_embedding import embed_rows
from graphunified_assets.lib.vectors.graph_vector_texts import ROW_TEXTS, TEXT_COLUMNS, column_texts
from graphunified_assets.lib.vectors.lance_slices import (
    SliceChange,
    apply_change,
    plan_change,
    plan_recent_change,
    rewrite,
    stored_rows,
    vector_matrix,
)
from graphunified_assets.lib.vectors.relationship_vectors import (
    PAIR_WEIGHT,
    relationship_text,
    relationship_vectors,
)
from graphunified_assets.lib.vectors.shard_staging import Shard, Staging, split
from graphunified_assets.ops.index_progress import embed_in_tenths, work_progress
from graphunified_query.core.artifacts import (
    ENTITIES,
    FACTS,
    GRAPH_VECTORS_MANIFEST,
    RELATIONSHIPS,
    VECTOR_TABLES,
    ann_file,
)
from graphunified_query.core.indexes import ann, ann_update
from graphunified_query.core.indexes.manifest import file_fingerprint, read_manifest, write_manifest
from graphunified_query.core.layout import HomeLayout
from graphunified_query.core.progress import Progress
from graphunified_query.core.providers import CachedEmbedder
from graphunified_query.core.stores.parquet import read_table
from graphunified_query.core.tables import INDEXED_AT

# The graph tables embedded here; the reports' vectors are built in `report_vectors.py`.
GRAPH_VECTOR_TABLES = {k: v for k, v in VECTOR_TABLES.items() if k in (ENTITIES, RELATIONSHIPS, FACTS)}
GRAPH_VECTOR_SOURCES = {target: source for source, target in GRAPH_VECTOR_TABLES.items()}
SLICE_ROWS = 16_384  # rows per slice: ~25 MB of vectors, a few tens of MB of Python rows


GRAPH_VECTORS = "graph_vectors"


def _composed(graphunified: GraphUnifiedResource) -> frozenset[str]:
    return graphunified.composed_vectors() & {ENTITIES, RELATIONSHIPS}


def _composition(graphunified: GraphUnifiedResource) -> dict[str, object]:
    """Whatever else decides how rows become vectors: a change rewrites every table."""
    return {
        "keyword_weight": graphunified.settings.graph.relationship_keyword_weight,  # LightRAG's keywords
        "pair_weight": PAIR_WEIGHT,
        "composed": sorted(_composed(graphunified)),  # tables composed from their sentences, the others whole
        "entity_exponent": ENTITY_EXPONENT,
        "name_weight": NAME_WEIGHT,
    }


def _vectorizer(graphunified: GraphUnifiedResource) -> _Vectorizer:
    weight = graphunified.settings.graph.relationship_keyword_weight
    return _Vectorizer(graphunified.embedder(), keyword_weight=weight, composed=_composed(graphunified))


def _plan(graphunified: GraphUnifiedResource, stage: Staging) -> list[Shard]:
    """Per table, the rows to compute: all of them (a rewrite) or, with the same model and
    composition settings as the stored vectors, those whose text changed (and the stale ids)."""
    layout = graphunified.layout
    model = graphunified.embedder().model_name
    previous = read_manifest(layout.index_path(GRAPH_VECTORS_MANIFEST)) or {}
    same_settings = previous.get("model") == model and all(
        previous.get(name) == value for name, value in _composition(graphunified).items()
    )
    db = lancedb.connect(str(layout.lancedb))
    keyword_weight = graphunified.settings.graph.relationship_keyword_weight
    tables, shards = {}, []
    for source, target in GRAPH_VECTOR_TABLES.items():
        path = layout.table_path(source)
        fingerprint = file_fingerprint(path)
        stamps = read_table(path, columns=["id", INDEXED_AT.name])
        change = None
        if same_settings:
            seen = (previous.get("seen") or {}).get(source)
            rewritten = fingerprint != (previous.get("built_from") or {}).get(source)
            recent = recent_rows(stamps, seen, rewritten=rewritten)
            change = _change(db, target, path, stamps, recent, model=model, keyword_weight=keyword_weight)
        parts = split(target, stamps.num_rows if change is None else len(change.compute))
        tables[target] = {
            "source": source,
            "fingerprint": fingerprint,
            "newest": newest_row(stamps),  # what the manifest records as seen, once committed
            "positions": None if change is None else change.compute.tolist(),  # None: every row
            "stale": [] if change is None else change.stale,
            "compared": 0 if change is None else change.compared,
            "shards": len(parts),
        }
        shards += parts
    stage.write_plan({"tables": tables})
    return shards


def _change(
    db: lancedb.DBConnection,
    target: str,
    path: Path,
    stamps: pa.Table,
    recent: np.ndarray | None,
    *,
    model: str,
    keyword_weight: float,
) -> SliceChange | None:
    """The rows whose text changed; None when the table must be rewritten (nothing stored,
    another model, most rows changed). With the rows made since the last commit known
    (``recent``), only theirs are composed and compared; else every row's."""
    source = GRAPH_VECTOR_SOURCES[target]

    def whole() -> SliceChange | None:
        stored = stored_rows(db, target, ["id", "text", "model"])
        texts = column_texts(read_table(path, columns=TEXT_COLUMNS[source]), source, keyword_weight)
        return plan_change(stamps.column("id"), texts, stored, key="id", model=model)

    if stamps.num_rows == 0:
        return None
    if recent is None:
        return whole()

    def texts_of(positions: np.ndarray) -> pa.Array | pa.ChunkedArray:
        rows = read_table(path, columns=TEXT_COLUMNS[source]).take(pa.array(positions, pa.int64()))
        return column_texts(rows, source, keyword_weight)

    return plan_recent_change(db, target, stamps.column("id"), recent, texts_of, key="id", whole=whole)


def _planned_rows(layout: HomeLayout, entry: dict[str, Any], columns: list[str] | None = None) -> pa.Table:
    """The source table the plan was made from, or its ``columns`` (a clear error if it changed
    since)."""
    path = layout.table_path(entry["source"])
    if file_fingerprint(path) != entry["fingerprint"]:
        raise RuntimeError(f"{path} changed while its vectors were computed; run the refresh again")
    return read_table(path, columns=columns)


def _shard(graphunified: GraphUnifiedResource, stage: Staging, shard: Shard) -> ShardCounts:
    """Computes one shard's rows (the model sees their distinct texts in one sorted pass) and
    stages them."""
    entry = stage.read_plan()["tables"][shard.table]
    table = _planned_rows(graphunified.layout, entry)
    positions = entry["positions"]
    if positions is None:
        part = table.slice(shard.start, shard.stop - shard.start)
    else:
        part = table.take(pa.array(positions[shard.start : shard.stop], pa.int64()))
    vectorizer = _vectorizer(graphunified)
    embedder = vectorizer.embedder
    calls_before, embedded_before = embedder.provider_calls, embedder.texts_embedded
    what = f"graph texts embedded ({shard.key})"
    _prefetch(vectorizer, part, entry["source"], work_progress(graphunified.settings.logging, what, "texts"))
    batches = [batch for batch, _ in _slices(part, entry["source"], vectorizer)]
    stage.write_rows(shard, pa.Table.from_batches(batches))
    return {
        "table": shard.table,
        "texts_requested": vectorizer.requested,  # per row: its texts (three per relationship)
        "texts_distinct": vectorizer.distinct,  # what reached the cache, once per slice
        "texts_embedded": embedder.texts_embedded - embedded_before,  # what the model computed
        "provider_calls": embedder.provider_calls - calls_before,
    }


def _commit(graphunified: GraphUnifiedResource, stage: Staging, shards: list[ShardCounts]) -> Metadata:
    """Applies every table's staged rows (a rewrite, or one delete and one append), updates the
    faiss indexes and writes the manifest."""
    layout = graphunified.layout
    embedder = graphunified.embedder()
    db = lancedb.connect(str(layout.lancedb))
    metadata: Metadata = {"model": embedder.model_name}
    texts = per_table(shards, "texts_embedded")
    planned = stage.read_plan()["tables"]
    _forget_seen(layout)  # until the manifest is written again, the next plan compares every row
    for target, entry in planned.items():
        ids = _planned_rows(layout, entry, columns=["id"]).column("id").to_pylist()  # not their texts
        lists_path = layout.index_path(ann_file(target))
        if entry["positions"] is None:

            def staged(target: str = target, shards: int = entry["shards"]) -> Iterator[pa.RecordBatch]:
                return stage.read_rows(target, shards)

            if not rewrite(db, target, staged()):
                empty = np.zeros((0, embedder.dimension), np.float32)  # no rows: of the model's size
                db.create_table(
                    target, data=_batch(pa.array([], pa.string()), [], empty, ""), mode="overwrite"
                )
            metadata[f"{target}_computed"] = len(ids)
            metadata[f"{target}_lists"] = _clustered(lists_path, ids, staged)
        else:
            computed = stage.read_table(target, entry["shards"])
            positions = np.asarray(entry["positions"], np.int64)
            change = SliceChange(positions, entry["stale"], kept=0, compared=entry["compared"])
            apply_change(db.open_table(target), "id", change.stale, computed)
            vectors = {}
            if computed is not None:
                vectors = dict(zip(computed.column("id").to_pylist(), vector_matrix(computed), strict=True))
            metadata[f"{target}_computed"] = len(change.compute)
            metadata[f"{target}_deleted"] = len(change.stale)
            metadata[f"{target}_compared"] = change.compared  # texts composed to find the changed rows
            metadata[f"{target}_lists"] = _updated_lists(lists_path, ids, change, vectors, db, target)
        metadata[target] = len(ids)
        metadata[f"{target}_texts"] = texts.get(target, 0)  # distinct texts its shards embedded
    manifest = write_manifest(
        layout.index_path(GRAPH_VECTORS_MANIFEST),
        {source: file_fingerprint(layout.table_path(source)) for source in GRAPH_VECTOR_TABLES},
        model=embedder.model_name,
        seen={entry["source"]: entry["newest"] for entry in planned.values()},
        **_composition(graphunified),
    )
    metadata["built_from"] = dg.MetadataValue.json(manifest["built_from"])
    return metadata


def _forget_seen(layout: HomeLayout) -> None:
    """The manifest without the newest row each table's vectors were made from: a commit that
    stops part-way (a rewrite for another model, say) leaves stored rows no plan may trust."""
    path = layout.index_path(GRAPH_VECTORS_MANIFEST)
    manifest = read_manifest(path)
    if manifest is not None and "seen" in manifest:
        details = {k: v for k, v in manifest.items() if k not in ("built_at", "built_from", "seen")}
        write_manifest(path, manifest["built_from"], **details)


class _Vectorizer:
    """How this run turns rows into vectors: the embedder (counting the texts asked for), its model
    and the composition settings the manifest records."""

    def __init__(self, embedder: CachedEmbedder, *, keyword_weight: float, composed: frozenset[str]) -> None:
        self.embedder = embedder
        self.model = embedder.model_name
        self.keyword_weight = keyword_weight  # > 0: relationships' LightRAG keywords join their vectors
        self.composed = composed  # tables composed from their sentences (`embedding.composed_vectors`)
        self.requested = 0
        self.distinct = 0

    def embed(self, texts: list[str]) -> np.ndarray:
        self.distinct += len(texts)
        return self.embedder.embed(texts)

    def batch(self, part: pa.Table, source: str) -> tuple[pa.RecordBatch, np.ndarray]:
        """Rows of ``source`` → their LanceDB batch and its float32 vectors."""
        texts, vectors = self.vectors(part.to_pylist(), source)
        return _batch(part.column("id").combine_chunks(), texts, vectors, self.model), vectors

    def vectors(self, rows: list[dict], source: str) -> tuple[list[str], np.ndarray]:
        """Rows → (their texts, their float32 vectors)."""
        if source == RELATIONSHIPS:
            texts = [relationship_text(row, keywords=self.keyword_weight > 0) for row in rows]
            self.requested += 3 * len(rows)  # description, source name, target name
            describe = (lambda t: description_vectors(t, self.embed)) if source in self.composed else None
            vectors = relationship_vectors(
                rows, self.embed, keyword_weight=self.keyword_weight, describe=describe
            )
        elif source in self.composed:  # entities, from the name and its sentences
            texts = [ROW_TEXTS[source](row) for row in rows]
            self.requested += sum(len(entity_pieces(row)) for row in rows)
            vectors = entity_vectors(rows, self.embed)
        else:
            texts = [ROW_TEXTS[source](row) for row in rows]
            self.requested += len(rows)
            vectors = embed_rows(texts, self.embed)
        return texts, np.ascontiguousarray(vectors, dtype=np.float32)


def _prefetch(vectorizer: _Vectorizer, rows: pa.Table, source: str, progress: Progress) -> None:
    """Embeds every distinct text a shard's rows ask for, shortest first, so the model's batches
    are sorted by token count across the shard; its slices then read them from the cache. Per
    slice and per part of a row (descriptions, names, keywords), each call's batches mixed lengths
    (60 passages: padded/real 1.08). The texts are found by running the slices' own composition
    with zero vectors, so no second list of what gets embedded exists."""
    wanted: dict[str, None] = {}  # insertion-ordered set

    def record(texts: list[str]) -> np.ndarray:
        wanted.update(dict.fromkeys(texts))
        return np.zeros((len(texts), vectorizer.embedder.dimension), np.float32)

    dry = copy.copy(vectorizer)
    dry.embed = record  # type: ignore[method-assign]
    for start in range(0, rows.num_rows, SLICE_ROWS):
        dry.vectors(rows.slice(start, SLICE_ROWS).to_pylist(), source)
    embed_in_tenths(vectorizer.embedder.embed, wanted, progress)


def _slices(
    table: pa.Table, source: str, vectorizer: _Vectorizer
) -> Iterator[tuple[pa.RecordBatch, np.ndarray]]:
    """(LanceDB batch, its float32 vectors) per ``SLICE_ROWS`` rows of ``table``."""
    for start in range(0, table.num_rows, SLICE_ROWS):
        yield vectorizer.batch(table.slice(start, SLICE_ROWS), source)


def _clustered(path: Path, ids: list[str], batches: Callable[[], Iterator[pa.RecordBatch]]) -> int:
    """The faiss index of the table of rows ``ids``, trained afresh on a sample of its vectors and
    filled from them a batch at a time → its lists; none for a table searched exactly.
    ``batches()`` reads the table's rows (id, vector) in ``ids`` order, each time afresh: a
    rewrite's staged rows (memory-mapped files), or the stored table when an update re-trains.

    The step never holds every vector twice: a matrix of the 316K relationship vectors is 485 MB,
    and so is the index. Reading them from LanceDB instead of the staged rows left the step
    1.1 GB larger than the vectors it kept (its reader holds on to what it read)."""
    if len(ids) < ann.MIN_ROWS:
        ann.remove(path)
        return 0
    positions = ann.sample_positions(len(ids))
    picked, offset = [], 0
    for batch in batches():  # the sample, in one pass
        wanted = positions[(positions >= offset) & (positions < offset + batch.num_rows)] - offset
        picked.append(vector_matrix(batch.take(pa.array(wanted))))
        offset += batch.num_rows

    def parts() -> Iterator[tuple[list[str], np.ndarray]]:
        return ((batch.column("id").to_pylist(), vector_matrix(batch)) for batch in batches())

    built = ann.build_from(np.concatenate(picked), parts, ids)
    ann.save(path, built)
    return built.lists


def _stored_batches(db: lancedb.DBConnection, target: str) -> Iterator[pa.RecordBatch]:
    query = db.open_table(target).search().select(["id", "vector"]).limit(None)
    yield from query.to_batches(SLICE_ROWS)


def _updated_lists(
    path: Path,
    ids: list[str],
    change: SliceChange,
    computed: dict[str, np.ndarray],
    db: lancedb.DBConnection,
    target: str,
) -> int:
    """The faiss index after a slice update: kept when it holds these rows, the stale rows removed
    and the computed ones added by id in its delta (its base read and written whole only when
    the delta is folded in), or re-trained from the stored vectors → its lists."""

    def stored() -> Iterator[pa.RecordBatch]:
        return _stored_batches(db, target)

    if len(ids) < ann.MIN_ROWS:
        return _clustered(path, ids, stored)
    if (kept := ann.lists_holding(path, ids)) is not None:  # no row changed
        return kept
    previous = ann.load_previous(path)
    found = ann_update.updated(previous, ids, change.stale, computed) if previous is not None else None
    if found is None:
        return _clustered(path, ids, stored)
    ann.save(path, found)
    return found.lists


def _batch(ids: pa.Array, texts: list[str], vectors: np.ndarray, model: str) -> pa.RecordBatch:
    flat = pa.array(vectors.ravel(), pa.float32())
    return pa.RecordBatch.from_pydict(
        {
            "id": ids,
            "text": pa.array(texts, pa.string()),
            "vector": pa.FixedSizeListArray.from_arrays(flat, vectors.shape[1]),
            "model": pa.array([model] * len(texts), pa.string()),
        }
    )


_OPS = ShardedOps(GRAPH_VECTORS, ShardedStep(plan=_plan, shard=_shard, commit=_commit), pool=MODELS_POOL)


@dg.graph_asset(
    name=GRAPH_VECTORS,
    group_name="indexes",
    kinds={"lancedb"},
    ins={name: dg.AssetIn(name, dagster_type=dg.Nothing) for name in (ENTITIES, RELATIONSHIPS, FACTS)},
    automation_condition=after_documents_change,
)
def graph_vectors(entities: Any, relationships: Any, facts: Any) -> Any:
    """Entity, relationship and fact vectors, computed in shards side by side and committed at
    once; unchanged rows and texts cost nothing (the stored vectors, the embedding cache)."""
    return _OPS.compose(entities, relationships, facts)
