"""Invariants of the graph tables and indexes, shown in the UI after every materialization.

They read their tables column by column with Arrow's kernels: Python rows of the 12.6K corpus's
tables (72K entities, 71K facts, 15K communities and their members) took 2-3 s of every refresh.
"""

import dagster as dg
import lancedb
import pyarrow as pa
import pyarrow.compute as pc

from graphunified_assets.defs.resources import GraphUnifiedResource
from graphunified_assets.lib.vectors.lance_slices import stored_columns
from graphunified_query.core.artifacts import (
    CHUNK_VECTORS,
    COMMUNITIES,
    COMMUNITY_REPORTS,
    ENTITIES,
    FACTS,
    RELATIONSHIPS,
    REPORT_POINT_VECTORS,
    REPORT_VECTORS,
    VECTOR_TABLES,
)
from graphunified_query.core.indexes.report_points import point_count
from graphunified_query.core.stores.parquet import read_table


def _live_chunk_ids(graphunified: GraphUnifiedResource) -> pa.Array:
    db = lancedb.connect(str(graphunified.layout.lancedb))
    return pc.unique(stored_columns(db, CHUNK_VECTORS, ["id"]).column("id"))


def _empty(lists: pa.ChunkedArray) -> pa.ChunkedArray:
    """Rows whose list is null or empty."""
    return pc.fill_null(pc.equal(pc.list_value_length(lists), 0), True)


def _missing(lists: pa.ChunkedArray, known: pa.Array | pa.ChunkedArray) -> tuple[set[str], set[int]]:
    """The values of ``lists`` not in ``known``, and the rows that hold one."""
    whole = lists.combine_chunks()  # one array: its values' parent indices are table rows
    values = pc.list_flatten(whole)
    absent = pc.invert(pc.is_in(values, known))
    rows = pc.list_parent_indices(whole).filter(absent)
    return set(values.filter(absent).to_pylist()), set(rows.to_pylist())


def _examples(values: list[str] | set[str]) -> str:
    return ", ".join(sorted(values)[:5])


@dg.asset_check(
    asset=ENTITIES,
    additional_deps=[CHUNK_VECTORS],
    description="No orphan entities: each has a source chunk and every chunk it names exists.",
)
def entities_have_live_sources(graphunified: GraphUnifiedResource) -> dg.AssetCheckResult:
    rows = read_table(graphunified.layout.table_path(ENTITIES), columns=["id", "text_unit_ids"])
    orphans = rows.column("id").filter(_empty(rows.column("text_unit_ids"))).to_pylist()
    dangling, _ = _missing(rows.column("text_unit_ids"), _live_chunk_ids(graphunified))
    return dg.AssetCheckResult(
        passed=not orphans and not dangling,
        metadata={
            "entities": rows.num_rows,
            "orphans": len(orphans),
            "missing_text_units": len(dangling),
            "examples": _examples(orphans or dangling),
        },
    )


@dg.asset_check(
    asset=RELATIONSHIPS,
    additional_deps=[CHUNK_VECTORS],
    description="Every relationship's endpoints are entities and every chunk it names exists.",
)
def relationships_are_anchored(graphunified: GraphUnifiedResource) -> dg.AssetCheckResult:
    layout = graphunified.layout
    entity_ids = read_table(layout.table_path(ENTITIES), columns=["id"]).column("id")
    rows = read_table(
        layout.table_path(RELATIONSHIPS), columns=["id", "source_id", "target_id", "text_unit_ids"]
    )
    anchored = pc.and_(
        pc.is_in(rows.column("source_id"), entity_ids), pc.is_in(rows.column("target_id"), entity_ids)
    )
    dangling, _ = _missing(rows.column("text_unit_ids"), _live_chunk_ids(graphunified))
    broken = rows.num_rows - (pc.sum(anchored).as_py() or 0)
    unsourced = pc.sum(_empty(rows.column("text_unit_ids"))).as_py() or 0
    return dg.AssetCheckResult(
        passed=not broken and not dangling and not unsourced,
        metadata={
            "relationships": rows.num_rows,
            "missing_endpoints": broken,
            "missing_text_units": len(dangling),
            "unsourced": unsourced,
        },
    )


@dg.asset_check(
    asset=FACTS, additional_deps=[CHUNK_VECTORS], description="Every fact is stated by a live chunk."
)
def facts_have_live_sources(graphunified: GraphUnifiedResource) -> dg.AssetCheckResult:
    chunks = read_table(graphunified.layout.table_path(FACTS), columns=["chunk_ids"]).column("chunk_ids")
    _, stale = _missing(chunks, _live_chunk_ids(graphunified))
    unsourced = len(stale) + (pc.sum(_empty(chunks)).as_py() or 0)  # an empty row has no value missing
    return dg.AssetCheckResult(passed=not unsourced, metadata={"facts": len(chunks), "unsourced": unsourced})


@dg.asset_check(
    asset=COMMUNITIES,
    description="The hierarchy is consistent: parents list their children, members exist, sizes match.",
)
def community_hierarchy_is_consistent(graphunified: GraphUnifiedResource) -> dg.AssetCheckResult:
    layout = graphunified.layout
    entity_ids = read_table(layout.table_path(ENTITIES), columns=["id"]).column("id")
    table = read_table(
        layout.table_path(COMMUNITIES), columns=["community", "parent", "children", "size", "entity_ids"]
    )
    numbers = table.column("community").to_pylist()
    parents = dict(zip(numbers, table.column("parent").to_pylist(), strict=True))
    children = dict(zip(numbers, table.column("children").to_pylist(), strict=True))
    members = table.column("entity_ids")
    _, unknown = _missing(members, entity_ids)
    miscounted = pc.not_equal(table.column("size"), pc.fill_null(pc.list_value_length(members), 0))
    problems = []
    for number, parent in parents.items():
        if parent != -1 and number not in (children.get(parent) or ()):
            problems.append(f"{number}: parent {parent} does not list it")
        if any(parents.get(child) != number for child in children[number] or ()):
            problems.append(f"{number}: a child names another parent")
    for row in sorted(unknown | set(pc.indices_nonzero(pc.fill_null(miscounted, True)).to_pylist())):
        problems.append(f"{numbers[row]}: members do not match the entities table")
    return dg.AssetCheckResult(
        passed=not problems, metadata={"communities": len(parents), "problems": _examples(problems)}
    )


@dg.asset_check(
    asset=REPORT_VECTORS,
    additional_deps=["graph_vectors", CHUNK_VECTORS],
    description="Each vector index has one row per table row (report points: per point) and all use one "
    "embedding model.",
)
def vector_indexes_match_tables(graphunified: GraphUnifiedResource) -> dg.AssetCheckResult:
    layout = graphunified.layout
    db = lancedb.connect(str(layout.lancedb))
    sources = VECTOR_TABLES
    counts: dict[str, str] = {}
    models: set[str] = set()
    mismatched = []
    for table, index in sources.items():
        rows = read_table(layout.table_path(table), columns=["id"]).num_rows
        vectors = stored_columns(db, index, ["model"])
        models |= set(pc.unique(vectors.column("model")).to_pylist())
        counts[index] = f"{vectors.num_rows} vectors / {rows} rows"
        if vectors.num_rows != rows:
            mismatched.append(index)
    # Global search's map points: one vector per point of every report.
    points = point_count(read_table(layout.table_path(COMMUNITY_REPORTS), columns=["summary", "findings"]))
    stored = stored_columns(db, REPORT_POINT_VECTORS, ["model"])
    models |= set(pc.unique(stored.column("model")).to_pylist())
    counts[REPORT_POINT_VECTORS] = f"{stored.num_rows} vectors / {points} report points"
    if stored.num_rows != points:
        mismatched.append(REPORT_POINT_VECTORS)
    models |= set(pc.unique(stored_columns(db, CHUNK_VECTORS, ["model"]).column("model")).to_pylist())
    return dg.AssetCheckResult(
        passed=not mismatched and len(models) <= 1,
        metadata={**counts, "models": ", ".join(sorted(models)), "mismatched": ", ".join(mismatched)},
    )
