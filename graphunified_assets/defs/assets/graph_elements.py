"""`entities`, `relationships`, `facts`: corpus-wide tables after entity resolution."""

import os
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

import dagster as dg
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from graphunified_assets.defs.io_manager import no_rows_failure
from graphunified_assets.defs.observability import llm_usage, markdown_table, numeric, stage_timing
from graphunified_assets.defs.partitions import DOCUMENTS_PARTITIONS, after_documents_change
from graphunified_assets.defs.resources import GraphUnifiedResource
from graphunified_assets.lib.extraction.extraction_rows import ExtractionRows
from graphunified_assets.lib.graph.graph_elements import GraphPatch, write_graph_elements
from graphunified_assets.lib.graph.graph_rows import TABLE_SLICE
from graphunified_assets.lib.graph.graph_state import GraphState, file_identity, load_state
from graphunified_assets.lib.graph.kept_rows import StaleGraphState
from graphunified_assets.lib.graph.relationship_keywords import SpacyPhrases
from graphunified_assets.lib.graph.resolution_pairs import PairMemory
from graphunified_assets.ops.partition_reads import MISSING, document_files, live_rows
from graphunified_query.core.artifacts import (
    ENTITIES,
    EXTRACTIONS,
    FACTS,
    RELATIONSHIP_KEYWORDS,
    RELATIONSHIPS,
)
from graphunified_query.core.embedding_models import uncalibrated_thresholds_warning
from graphunified_query.core.layout import HomeLayout
from graphunified_query.core.providers.fused_embedder import calibrated_embedder, primary_embedder
from graphunified_query.core.providers.llm_cache import LLMCache
from graphunified_query.core.stores.parquet import stage_batches
from graphunified_query.core.tables import stamp_indexed_at

PAIR_MEMORY = "resolution_pairs.pickle"  # in the home's cache folder: deleting it costs one full resolution
OLD_PAIR_MEMORY = "resolution_pairs.json.gz"  # its format before version 2, removed once replaced
GRAPH_STATE = "graph_state.pickle"  # ditto: deleting it makes the next update a build from nothing


def _table_spec(name: str, description: str) -> dg.AssetSpec:
    return dg.AssetSpec(
        name,
        group_name="graph",
        kinds={"parquet"},
        deps=["extractions"],
        description=description,
        automation_condition=after_documents_change,
    )


@dg.multi_asset(
    specs=[
        _table_spec(ENTITIES, "Resolved entities (GraphRAG `entities` columns plus merged_from)."),
        _table_spec(RELATIONSHIPS, "Weighted, undirected relationships between resolved entities."),
        _table_spec(FACTS, "Subject-predicate-object facts with the chunks that state them."),
    ],
    pool="llm",  # Claude description summaries share the provider limits with extraction
)
def graph_elements(context: dg.AssetExecutionContext, graphunified: GraphUnifiedResource):
    """Resolve every chunk's mentions into one entity per real-world thing, then aggregate; an
    update patches the last build's tables (`GraphPatch`)."""
    layout = graphunified.layout
    live = context.instance.get_dynamic_partitions(DOCUMENTS_PARTITIONS)
    # Stamped before the read: a file rewritten meanwhile has another stamp, so the next build
    # reads it again.
    present = document_files(layout, EXTRACTIONS, sorted(live))
    stamps = {doc: list(MISSING) for doc in live} | {f.key: f.stamp for f in present}
    # Read a slice at a time from the consolidated copy of every live document's rows and the few
    # files changed since: neither the Python rows (~0.4 GB at 12.6K passages) nor the Arrow
    # table (~0.25 GB) is held, and an update does not rewrite the copy.
    source = live_rows(layout, EXTRACTIONS, present)
    if source is None:
        raise no_rows_failure(EXTRACTIONS, layout)
    rows = ExtractionRows(source)
    chunks = rows.chunks_by_document()
    # Name neighbours for resolution (cached) come from the first model, in the variant its cosine
    # threshold was set on; summaries rank sentences with the first model as configured.
    resolver = calibrated_embedder(graphunified.embedder())
    describer = primary_embedder(graphunified.embedder())
    if warning := uncalibrated_thresholds_warning(resolver.model_name):
        context.log.warning(warning)  # e.g. e5 alone: its cosines pass far more name pairs
    summarizer = graphunified.summarizer()
    # An update patches the last build's tables: read on a thread (Arrow decodes them without the
    # GIL) while this one unpickles the pair memory and the state.
    last_tables = _reading(layout) if (layout.cache / GRAPH_STATE).exists() else None
    # Candidate pairs of the last build: an update compares only new and changed names.
    memory = PairMemory.load(layout.cache / PAIR_MEMORY, {"model": resolver.model_name})
    # Offline relationships get their sentence's theme phrases as keywords (cached by content),
    # when an enabled strategy reads them (LightRAG's thematic layer).
    keywords_cache = LLMCache(layout.relationship_keywords_cache)
    wanted = graphunified.builds(RELATIONSHIP_KEYWORDS)
    phrases = SpacyPhrases(keywords_cache, graphunified.parse_processes()) if wanted else None
    built_with = {
        "summarize_above": graphunified.settings.extraction.summarize_above_fragments,
        "resolver": resolver.model_name,
        # Named only when it differs (another variant): homes built before it was recorded keep
        # their state.
        **({"describer": describer.model_name} if describer.model_name != resolver.model_name else {}),
        # With an LLM, its settings (model, the summary threshold): any change builds from nothing.
        "summarizer": None if summarizer is None else graphunified.settings.llm.model_dump(mode="json"),
        "keywords": wanted,
        "facts": graphunified.builds(FACTS),
    }
    state = load_state(layout.cache / GRAPH_STATE, built_with, _identities(layout))
    at = datetime.now(UTC)
    staged: dict[str, Path] = {}

    def stage(name: str, schema: pa.Schema, pieces: Iterator[pa.Table]) -> None:
        # Facts only for a strategy that reads them (HippoRAG): none to embed otherwise.
        kept = pieces if name != FACTS or graphunified.builds(FACTS) else iter(())
        stamped = (stamp_indexed_at(piece, at) for piece in kept)
        staged[name] = stage_batches(layout.table_path(name), schema, stamped, row_group_rows=TABLE_SLICE)

    def build(patch: GraphPatch | None) -> dict[str, int]:
        return write_graph_elements(
            rows,
            stage,
            summarize_above=graphunified.settings.extraction.summarize_above_fragments,
            embed=lambda texts: describer.embed(texts),
            embed_names=lambda texts: resolver.embed(texts),
            summarize=summarizer,
            memory=memory,
            phrases=phrases,
            state=state,
            patch=patch,
        )

    try:
        patch = None if state.is_empty or last_tables is None else _patch(state, stamps, chunks, last_tables)
        last_tables = None  # held by the patch, if any: a build from nothing does not keep them
        if patch is None and not state.is_empty:  # most documents changed: as cheap from nothing
            state = GraphState(settings=built_with)
        try:
            merged = build(patch)
        except StaleGraphState as stale:
            context.log.warning(f"graph_elements builds from nothing: {stale}")
            for path in staged.values():
                path.unlink(missing_ok=True)
            state, patch = GraphState(settings=built_with), None
            merged = build(None)
        # Phrases of live sentences only: the rest are removed documents' text (all of it when no
        # enabled strategy reads keywords). An update that removed nothing left none: keying
        # every live sentence again took 0.3 s of each one-passage add at 12.6K passages.
        if patch is None or patch.gone or phrases is None:
            keywords_cache.keep_only(phrases.keys(rows.relationship_texts()) if phrases is not None else ())
        memory.save(layout.cache / PAIR_MEMORY)
        (layout.cache / OLD_PAIR_MEMORY).unlink(missing_ok=True)
        state.record_documents(stamps, chunks)
        state.tables = {name: file_identity(path) for name, path in staged.items()}  # a rename keeps them
        for name, path in staged.items():  # the three tables replaced together, once all are made
            os.replace(path, layout.table_path(name))
    finally:
        for path in staged.values():
            path.unlink(missing_ok=True)  # renamed already, or a failed build's
    if getattr(summarizer, "failures", 0):
        # A summary that failed kept its fragments; only a build from nothing asks for it again.
        (layout.cache / GRAPH_STATE).unlink(missing_ok=True)
    else:
        state.save(layout.cache / GRAPH_STATE)
    entities = pq.read_table(layout.table_path(ENTITIES), columns=["type"])
    merges = {f"merged_{rule}": count for rule, count in merged.items()}
    types = pc.value_counts(entities.column("type")).to_pylist() if entities.num_rows else []
    # value_counts' {values, counts} structs, the most frequent type first
    type_counts: list[tuple[str, int]] = sorted(
        ((t["values"], t["counts"]) for t in types), key=lambda r: -r[1]
    )
    timing = stage_timing()  # one step builds all three tables
    yield dg.MaterializeResult(
        asset_key=ENTITIES,
        metadata={
            **numeric(
                {
                    "rows": entities.num_rows,
                    "documents": len(live),
                    # Chunks of new or rewritten documents an update read (all, built from nothing).
                    "chunks_read": len(rows) if patch is None else len(patch.added),
                    "mentions_merged": sum(merged.values()),
                    **memory.work,  # what resolution compared this run (new names only on updates)
                    # Sentences the document runs had not parsed for keywords (none, normally).
                    "keyword_texts_parsed": phrases.parsed if phrases is not None else 0,
                    **merges,
                }
            ),
            "build": dg.MetadataValue.text("patched" if patch is not None else "from nothing"),
            "merges": markdown_table(["rule", "mentions merged"], sorted(merged.items())),
            "types": markdown_table(["type", "entities"], type_counts),
            **llm_usage(getattr(summarizer, "client", None)),
            **timing,
        },
    )
    keywords = pq.read_table(layout.table_path(RELATIONSHIPS), columns=["keywords"])
    yield dg.MaterializeResult(
        asset_key=RELATIONSHIPS, metadata={**relationship_metadata(keywords), **timing}
    )
    facts = pq.read_metadata(layout.table_path(FACTS)).num_rows
    yield dg.MaterializeResult(asset_key=FACTS, metadata={**numeric({"rows": facts}), **timing})


def _identities(layout: HomeLayout) -> dict[str, list[int]]:
    return {name: file_identity(layout.table_path(name)) for name in (ENTITIES, RELATIONSHIPS, FACTS)}


def _reading(layout: HomeLayout) -> Future[tuple[pa.Table, pa.Table, pa.Table]]:
    """The last build's entities, relationships and facts, being read on a thread of their own."""
    reader = ThreadPoolExecutor(max_workers=1, thread_name_prefix="graph-tables")
    tables = reader.submit(
        lambda: tuple(pq.read_table(layout.table_path(t)) for t in (ENTITIES, RELATIONSHIPS, FACTS))
    )
    reader.shutdown(wait=False)  # the thread ends with its read
    return tables


def _patch(
    state: GraphState,
    stamps: dict[str, list[int]],
    chunks: dict[str, list[str]],
    last_tables: Future[tuple[pa.Table, pa.Table, pa.Table]],
) -> GraphPatch | None:
    """What changed since the build ``state`` comes from, with that build's tables; None when
    most documents are new or rewritten (re-extracted with other settings, say)."""
    gone, new = state.changed_documents(stamps)
    if len(new) > len(stamps) // 2:
        return None
    entities, relationships, facts = last_tables.result()
    added = {chunk for doc in new for chunk in chunks.get(doc, ())}
    return GraphPatch(entities, relationships, facts, gone=gone, added=added)


def relationship_metadata(relationships: pa.Table, shown: int = 15) -> dict[str, dg.MetadataValue]:
    """Rows, how many carry high-level keywords, and the commonest keywords (LightRAG `global`);
    ``relationships`` needs only its `keywords` column. Counted in Arrow: 316K rows' lists as
    Python took 1.2 s of every 12.6K update."""
    keywords = relationships.column("keywords")
    with_keywords = pc.sum(pc.greater(pc.fill_null(pc.list_value_length(keywords), 0), 0)).as_py() or 0
    counts = pc.value_counts(pc.list_flatten(keywords)).to_pylist() if len(keywords) else []
    top = sorted(((c["values"], c["counts"]) for c in counts), key=lambda kc: (-kc[1], kc[0]))[:shown]
    return {
        **numeric({"rows": relationships.num_rows, "with_keywords": with_keywords}),
        "top_keywords": markdown_table(["keyword", "relationships"], top),
    }
