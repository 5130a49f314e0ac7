"""Report vectors for global search: each community report's vector, and the vectors of the
points in each report (summary and findings), which global search's offline map ranks. Computed in
shards by community, side by side, and committed at once (`sharded.ShardedOps`).
"""

import dataclasses
from pathlib import Path
from typing import Any

import dagster as dg
import lancedb
import numpy as np
import pyarrow as pa

from graphunified_assets.defs.assets.sharded import ShardCounts, ShardedOps, ShardedStep
from graphunified_assets.defs.executors import MODELS_POOL
from graphunified_assets.defs.observability import Metadata
from graphunified_assets.defs.partitions import after_documents_change
from graphunified_assets.defs.resources import GraphUnifiedResource
from graphunified_assets.lib.reports.report_slices import points_change, report_change
from graphunified_assets.lib.vectors.composed_vectors import ReportEmbedding
from graphunified_assets.lib.vectors.distinct_embedding import Embed, embed_rows
from graphunified_assets.lib.vectors.lance_slices import StoredVectors, apply_change, rewrite
from graphunified_assets.lib.vectors.piece_memory import (
    REPORT_PIECES,
    PieceLookup,
    PieceMemory,
    communities_of,
)
from graphunified_assets.lib.vectors.shard_staging import Shard, Staging, split
from graphunified_assets.ops.index_progress import embed_in_tenths, work_progress
from graphunified_query.core.artifacts import COMMUNITY_REPORTS, REPORT_POINT_VECTORS, REPORT_VECTORS
from graphunified_query.core.indexes.manifest import file_fingerprint, read_manifest, write_manifest
from graphunified_query.core.indexes.report_points import report_points
from graphunified_query.core.layout import HomeLayout
from graphunified_query.core.providers import CachedEmbedder
from graphunified_query.core.stores.parquet import read_table


def report_text(row: dict) -> str:
    """What a report is searched by: its title, summary and finding headlines."""
    findings = "; ".join(f["summary"] for f in row["findings"])
    return f"{row['title']}. {row['summary']} {findings}"


def _report_composition(graphunified: GraphUnifiedResource) -> list[str]:
    """The report tables composed from their pieces (`embedding.composed_vectors`)."""
    return sorted(graphunified.composed_vectors() & {"reports", "report_points"})


def _planned_reports(layout: HomeLayout, plan: dict[str, Any], columns: list[str] | None = None) -> pa.Table:
    """The reports the plan was made from, or their ``columns`` (a clear error if they changed since)."""
    path = layout.table_path(COMMUNITY_REPORTS)
    if file_fingerprint(path) != plan["fingerprint"]:
        raise RuntimeError(f"{path} changed while its vectors were computed; run the refresh again")
    return read_table(path, columns=columns)


_PLANNED_COLUMNS = ["id", "community", "level", "title", "summary", "findings"]


def _report_plan(graphunified: GraphUnifiedResource, stage: Staging) -> list[Shard]:
    """The reports (communities) to compute, split into shards: per table (the reports' vectors,
    their points' vectors) every report (a rewrite) or those whose text or numbering changed, and
    the stale ones. A shard computes both tables for its communities: a report's text and its
    points share their summary sentences and headlines, embedded once."""
    layout = graphunified.layout
    # What the plan compares: not the reports' long columns (full_content alone is most of the file).
    reports = read_table(layout.table_path(COMMUNITY_REPORTS), columns=_PLANNED_COLUMNS)
    model = graphunified.embedder().model_name
    rows = reports.select(["title", "summary", "findings"]).to_pylist()
    texts = pa.array([report_text(row) for row in rows], pa.string())
    points = [report_points(row) for row in rows]
    db = lancedb.connect(str(layout.lancedb))
    # An update writes only the reports that changed; a text stored already keeps its vector
    # (renumbered communities move rows, not texts). Stored vectors composed otherwise are not reused.
    composed = _report_composition(graphunified)
    same = (read_manifest(layout.index_path(REPORT_VECTORS)) or {}).get("composed") == composed
    changes = {
        REPORT_VECTORS: report_change(db, REPORT_VECTORS, reports, texts, model) if same else None,
        REPORT_POINT_VECTORS: points_change(db, REPORT_POINT_VECTORS, reports, points, model)
        if same
        else None,
    }
    tables: dict[str, dict[str, Any]] = {
        name: {
            "rewrite": change is None,
            "positions": list(range(reports.num_rows)) if change is None else change.compute.tolist(),
            "stale": [] if change is None else change.stale,
        }
        for name, change in changes.items()
    }
    wanted = sorted({i for entry in tables.values() for i in entry["positions"]})
    shards = split(REPORT_VECTORS, len(wanted))
    stage.write_plan(
        {
            "tables": tables,
            "wanted": wanted,  # the reports some table computes; shards are slices of it
            "shards": len(shards),
            "same": same,
            "composed": composed,
            "fingerprint": file_fingerprint(layout.table_path(COMMUNITY_REPORTS)),
            "reports": reports.num_rows,
            "points": sum(len(p) for p in points),
        }
    )
    return shards


def _report_shard(graphunified: GraphUnifiedResource, stage: Staging, shard: Shard) -> ShardCounts:
    """One shard's reports: their report and point rows embedded and staged. On a rewrite every
    distinct text (or piece) of the shard goes to the model in one sorted pass; a text the table
    stores already keeps its vector."""
    plan = stage.read_plan()
    reports = _planned_reports(graphunified.layout, plan)
    mine = set(plan["wanted"][shard.start : shard.stop])
    embedder = graphunified.embedder()
    embedded_before = embedder.texts_embedded
    db = lancedb.connect(str(graphunified.layout.lancedb))
    positions = {name: [i for i in entry["positions"] if i in mine] for name, entry in plan["tables"].items()}
    parts = {name: reports.take(pa.array(found, pa.int64())) for name, found in positions.items()}
    rows = {name: part.to_pylist() for name, part in parts.items()}
    texts = [report_text(row) for row in rows[REPORT_VECTORS]]
    points = [report_points(row) for row in rows[REPORT_POINT_VECTORS]]
    composed = frozenset(plan["composed"])
    # Each table's own reports: a report's text where its text changed, its points where they did.
    vectors = ReportEmbedding(rows[REPORT_VECTORS], texts, [], composed - {"report_points"})
    point_vectors = ReportEmbedding(rows[REPORT_POINT_VECTORS], [], points, composed - {"reports"})
    # A rewritten report's pieces are mostly its previous version's: read from the piece memory.
    pieces = PieceLookup(PieceMemory.load(_pieces_path(graphunified), embedder.model_name), embedder.embed)
    if all(entry["rewrite"] for entry in plan["tables"].values()):  # one pass, sorted across the shard
        what = f"report texts embedded ({shard.key})"
        progress = work_progress(graphunified.settings.logging, what, "texts")
        wanted = pieces.lacking([*vectors.wanted(), *point_vectors.wanted()])
        embed_in_tenths(embedder.embed, wanted, progress)
    # A text embedded whole keeps its stored vector; a composed one is composed again from the
    # piece memory, to the same bits (reading the 101K stored point vectors cost 0.7-2 s). Stored
    # vectors made another way are not reused, so not read.
    stored = _stored(db, REPORT_VECTORS, "reports", plan, embedder.model_name)
    embed = _reusing(stored, vectors.reports(pieces))
    stage.write_rows(shard, _report_table(parts[REPORT_VECTORS], texts, embedder, embed))
    stored_points = _stored(db, REPORT_POINT_VECTORS, "report_points", plan, embedder.model_name)
    embed_point = _reusing(stored_points, point_vectors.report_points(pieces))
    point_rows = _point_table(parts[REPORT_POINT_VECTORS], points, embedder, embed_point)
    stage.write_rows(dataclasses.replace(shard, table=REPORT_POINT_VECTORS), point_rows)
    staged = [
        pieces.staged(name, part.column("community").to_pylist(), found.row_pieces())
        for name, part, found in (
            (REPORT_VECTORS, parts[REPORT_VECTORS], vectors),
            (REPORT_POINT_VECTORS, parts[REPORT_POINT_VECTORS], point_vectors),
        )
    ]
    stage.write_rows(dataclasses.replace(shard, table=REPORT_PIECES), pa.concat_tables(staged))
    return {
        "table": shard.table,
        "vectors_reused": sum(s.reused for s in (stored, stored_points) if s),  # stored texts, not embedded
        "pieces_remembered": pieces.remembered,  # pieces read from the piece memory, not the cache
        "texts_embedded": embedder.texts_embedded - embedded_before,  # this step's, not the run's
    }


def _report_commit(graphunified: GraphUnifiedResource, stage: Staging, shards: list[ShardCounts]) -> Metadata:
    """Every table's staged rows written at once (a rewrite, or one delete and one append)."""
    layout = graphunified.layout
    embedder = graphunified.embedder()
    db = lancedb.connect(str(layout.lancedb))
    plan = stage.read_plan()
    for name, entry in plan["tables"].items():
        if not entry["rewrite"]:
            rows = stage.read_table(name, plan["shards"])
            apply_change(db.open_table(name), "community", entry["stale"], rows)
            continue
        if not rewrite(db, name, stage.read_rows(name, plan["shards"])):  # streamed, a shard at a time
            none = _planned_reports(layout, plan).slice(0, 0)  # no reports: empty, of the model's width
            rows = (
                _report_table(none, [], embedder, embedder.embed)
                if name == REPORT_VECTORS
                else _point_table(none, [], embedder, embedder.embed)
            )
            db.create_table(name, data=rows, mode="overwrite")
    _remember_pieces(graphunified, stage, plan)
    manifest = write_manifest(
        layout.index_path(REPORT_VECTORS),
        {COMMUNITY_REPORTS: file_fingerprint(layout.table_path(COMMUNITY_REPORTS))},
        model=embedder.model_name,
        composed=plan["composed"],
    )
    return {
        "rows": plan["reports"],
        "reports_computed": len(plan["tables"][REPORT_VECTORS]["positions"]),
        "report_points": plan["points"],
        "model": embedder.model_name,
        "built_from": dg.MetadataValue.json(manifest["built_from"]),
    }


def _pieces_path(graphunified: GraphUnifiedResource) -> Path:
    return graphunified.layout.cache / REPORT_PIECES


def _remember_pieces(graphunified: GraphUnifiedResource, stage: Staging, plan: dict[str, Any]) -> None:
    """The piece memory after this commit: each recomputed or removed community's pieces replaced
    by what its shard staged (all of them on a rewrite)."""
    tables = plan["tables"].values()
    if not plan["composed"] or not any(t["rewrite"] or t["positions"] or t["stale"] for t in tables):
        return  # nothing composed, or nothing recomputed: the memory stands
    path, model = _pieces_path(graphunified), graphunified.embedder().model_name
    community = _planned_reports(graphunified.layout, plan, ["community"]).column("community")
    dropped = {
        name: None if entry["rewrite"] else {*communities_of(community, entry["positions"]), *entry["stale"]}
        for name, entry in plan["tables"].items()
    }
    # The memory the shards read: their staged rows carry only the vectors of pieces it lacks.
    memory = PieceMemory.load(path, model)
    memory.updated(dropped, lambda: stage.read_rows(REPORT_PIECES, plan["shards"])).save(path, model)


def _stored(db: Any, name: str, setting: str, plan: dict[str, Any], model: str) -> StoredVectors | None:
    """Table ``name``'s stored vectors by text, when made as this run makes them and embedded whole
    (``setting`` is its name in `embedding.composed_vectors`)."""
    return StoredVectors(db, name, model) if plan["same"] and setting not in plan["composed"] else None


def _reusing(stored: StoredVectors | None, embed: Embed) -> Embed:
    """``embed`` returning a stored text's vector, when there are stored vectors made the same way."""
    return stored.embedding(embed) if stored is not None else embed


_REPORT_OPS = ShardedOps(
    REPORT_VECTORS,
    ShardedStep(plan=_report_plan, shard=_report_shard, commit=_report_commit),
    pool=MODELS_POOL,
)


@dg.graph_asset(
    name=REPORT_VECTORS,
    group_name="indexes",
    kinds={"lancedb"},
    ins={COMMUNITY_REPORTS: dg.AssetIn(COMMUNITY_REPORTS, dagster_type=dg.Nothing)},
    automation_condition=after_documents_change,
)
def report_vectors(community_reports: Any) -> Any:
    """Community report embeddings for global search, and each report's points (summary and
    findings) for its offline map, so a query embeds only itself: computed in shards (by
    community) side by side and committed at once (unchanged reports and points cost nothing)."""
    return _REPORT_OPS.compose(community_reports)


def _report_table(reports: pa.Table, texts: list[str], embedder: CachedEmbedder, embed: Embed) -> pa.Table:
    """Report rows → their LanceDB rows, each text embedded."""
    return pa.table(
        {
            "id": reports.column("id"),
            "community": reports.column("community"),
            "level": reports.column("level"),
            "text": pa.array(texts, pa.string()),
            "vector": _vector_column(embed(texts) if texts else None, embedder.dimension),
            "model": pa.array([embedder.model_name] * len(texts), pa.string()),
        }
    )


def _point_table(
    reports: pa.Table, points: list[list[str]], embedder: CachedEmbedder, embed: Embed
) -> pa.Table:
    """One row per point, a report's points contiguous in order: the map reads them by community."""
    ids, communities = reports.column("id").to_pylist(), reports.column("community").to_pylist()
    rows = [(ids[r], communities[r], n, t) for r, found in enumerate(points) for n, t in enumerate(found)]
    point_texts = [text for _, _, _, text in rows]
    point_vectors = embed_rows(point_texts, embed) if rows else None
    return pa.table(
        {
            "id": pa.array([row[0] for row in rows], pa.string()),
            "community": pa.array([row[1] for row in rows], reports.schema.field("community").type),
            "point": pa.array([row[2] for row in rows], pa.int32()),
            "text": pa.array(point_texts, pa.string()),
            "vector": _vector_column(point_vectors, embedder.dimension),
            "model": pa.array([embedder.model_name] * len(rows), pa.string()),
        }
    )


def _vector_column(vectors: np.ndarray | None, dimension: int) -> pa.FixedSizeListArray:
    """float32 vectors as LanceDB's fixed-size list column (None: no rows, the model's width)."""
    if vectors is None:
        vectors = np.zeros((0, dimension), np.float32)
    flat = pa.array(np.asarray(vectors, np.float32).ravel(), pa.float32())
    return pa.FixedSizeListArray.from_arrays(flat, vectors.shape[1])
