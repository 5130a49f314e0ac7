"""`extractions`: entities, relationships and facts found in each chunk (the one shared pass)."""

import time

import dagster as dg
import pyarrow as pa

from graphunified_assets.defs.catalog import logic_version
from graphunified_assets.defs.failure_metadata import failure_metadata, record_failures
from graphunified_assets.defs.io_manager import without_partitions
from graphunified_assets.defs.observability import llm_usage, stage_timing
from graphunified_assets.defs.partitions import per_document_asset
from graphunified_assets.defs.resources import GraphUnifiedResource
from graphunified_assets.lib.extraction import offline_extractor, offline_facts
from graphunified_assets.lib.extraction.cache_purge import extraction_inputs
from graphunified_assets.lib.extraction.chunk_failures import ChunkFailure, document_failures
from graphunified_assets.lib.extraction.records import ChunkExtraction
from graphunified_assets.lib.graph.graph_elements import texts_to_embed
from graphunified_assets.lib.graph.relationship_keywords import SpacyPhrases, texts_to_parse
from graphunified_assets.lib.ingest.index_state import IndexState
from graphunified_assets.ops.index_progress import work_progress
from graphunified_query.core.artifacts import EXTRACTIONS, RELATIONSHIP_KEYWORDS, RELATIONSHIPS
from graphunified_query.core.providers.cost import BudgetExceeded
from graphunified_query.core.providers.fused_embedder import calibrated_embedder
from graphunified_query.core.providers.llm_cache import LLMCache
from graphunified_query.core.tables import EXTRACTIONS_SCHEMA

SLICE_MIN = 64  # chunks per extraction call, at least
STAGE = "extract"  # the failures table's stage for documents whose extraction failed


@per_document_asset(
    table=EXTRACTIONS,
    group_name="extract",
    pool="llm",
    code_version=logic_version(offline_extractor, offline_facts),
)
def extractions(
    context: dg.AssetExecutionContext, graphunified: GraphUnifiedResource, chunks: pa.Table
) -> pa.Table:
    """Per-chunk entities, relationships and subject-predicate-object facts.

    A document with a chunk whose extraction failed for good is left out (no file is written for
    it), recorded in the failures table and reported in the metadata; the others complete.
    """
    extractor = graphunified.extractor()
    ids, raw = chunks.column("id").to_pylist(), chunks.column("text").to_pylist()
    sections = chunks.column("section").to_pylist()
    texts = extraction_inputs(ids, sections, raw)
    started = time.perf_counter()
    # The LLM extractor reports each chunk's failure instead of raising: one bad call fails one document.
    extract_each = getattr(extractor, "extract_each", extractor.extract)
    progress = work_progress(graphunified.settings.logging, "chunks extracted", "chunks")
    # A tenth of the chunks per call (a progress line each); at least SLICE_MIN, so the spaCy
    # batches and the LLM's concurrent calls stay full.
    step = max(len(texts) // 10, SLICE_MIN)
    outcomes: list[ChunkExtraction | ChunkFailure] = []
    try:
        for start in range(0, len(texts), step):
            outcomes += extract_each(texts[start : start + step])
            progress(len(outcomes), len(texts))
    except BudgetExceeded as error:
        # Every finished call is in the LLM cache: raising the budget resumes from here.
        raise dg.Failure(description=str(error), metadata=_cost(extractor)) from None
    documents = dict(
        zip(chunks.column("id").to_pylist(), chunks.column("document_id").to_pylist(), strict=True)
    )
    failed = document_failures([o for o in outcomes if isinstance(o, ChunkFailure)], documents)
    results = [o for o in outcomes if isinstance(o, ChunkExtraction) and documents[o.chunk_id] not in failed]
    table = without_partitions(extractions_table(results, documents, extractor.name), failed)
    parsed = _parse_keyword_texts(graphunified, table)
    _embed_graph_texts(graphunified, table)
    record_failures(context, IndexState(graphunified.layout.index_state), STAGE, failed, what="extraction")
    seconds = time.perf_counter() - started
    context.add_output_metadata(
        {
            **failure_metadata(failed),
            "extractor": extractor.name,
            "chunks": len(results),
            "entities": sum(len(r.entities) for r in results),
            "relationships": sum(len(r.relationships) for r in results),
            "facts": sum(len(r.facts) for r in results),
            "dropped_records": sum(r.dropped_records for r in results),
            # The LLM's salvage: malformed JSON repaired in place, and repair turns sent back.
            "repaired_outputs": int(sum(r.extra.get("repaired_outputs", 0) for r in results)),
            "repair_turns": int(sum(r.extra.get("repair_turns", 0) for r in results)),
            "chunks_per_second": round(len(results) / seconds, 1) if seconds else 0.0,
            # Offline results found by content (the LLM extractors count theirs in llm_usage).
            "extraction_cache_hits": getattr(extractor, "hits", 0),
            "keyword_texts_parsed": parsed,
            **_cost(extractor),
            **llm_usage(getattr(extractor, "client", None)),  # zeros offline: the UI plots a flat line
            **stage_timing(),
        }
    )
    return table


def extractions_table(results: list[ChunkExtraction], documents: dict[str, str], extractor: str) -> pa.Table:
    rows = [
        {
            "chunk_id": r.chunk_id,
            "document_id": documents[r.chunk_id],
            "extractor": extractor,
            "entities": [e.model_dump() for e in r.entities],
            "relationships": [x.model_dump() for x in r.relationships],
            "facts": [f.model_dump() for f in r.facts],
            "dropped_records": r.dropped_records,
        }
        for r in results
    ]
    return pa.Table.from_pylist(rows, schema=EXTRACTIONS_SCHEMA)


def _parse_keyword_texts(graphunified: GraphUnifiedResource, table: pa.Table) -> int:
    """Parses the theme phrases of these documents' relationship sentences into their cache
    (when an enabled strategy reads keywords), so the parse spreads with the document runs and
    `graph_elements`, one global step, finds them parsed; returns the texts parsed (not cached)."""
    if not graphunified.builds(RELATIONSHIP_KEYWORDS):
        return 0
    phrases = SpacyPhrases(
        LLMCache(graphunified.layout.relationship_keywords_cache), graphunified.parse_processes()
    )
    phrases(texts_to_parse(table.select(["relationships"]).to_pylist()))
    return phrases.parsed


def _embed_graph_texts(graphunified: GraphUnifiedResource, table: pa.Table) -> None:
    """Embeds these documents' entity names and description sentences into the embedding cache
    (`texts_to_embed`), with every model the global steps embed them with, so the model's graph
    work spreads with the document runs and `graph_elements` and `graph_vectors`, global steps,
    find their vectors cached (`graph_elements`' `embed_texts` is then absent: no batch ran). The
    step's own `embed_*` metadata counts what the model computed.

    Every description sentence only where they are all read anyway: extractive summaries rank
    some, and composed relationship vectors (the local model's default) are made of all the
    relationships' sentences. Otherwise (LLM summaries, or a provider embedding relationships
    whole) the names alone: `graph_elements` embeds the few sentences its summaries rank."""
    rows = table.select(["entities", "relationships"]).to_pylist()
    every_sentence = graphunified.summarizer() is None and RELATIONSHIPS in graphunified.composed_vectors()
    names, sentences = texts_to_embed(rows, sentences_too=every_sentence)
    embedder = graphunified.embedder()
    # Names are resolved with the first model in the variant its threshold was set on.
    resolver = calibrated_embedder(embedder)
    resolver.embed(names)
    # The tables' embedder (every configured model, each cached under its own name) makes composed
    # relationship vectors of these sentences and mixes the endpoints' names into every
    # relationship vector; its first model ranks the summaries' sentences. Under another variant
    # or with fused models the names are embedded again (the resolver's vectors are looked up).
    embedder.embed(sentences + names if embedder.model_name != resolver.model_name else sentences)


def _cost(extractor: object) -> dict[str, float | int]:
    """LLM calls, tokens and dollars of this materialization (none for the offline extractor)."""
    client = getattr(extractor, "client", None)
    return client.ledger.as_metadata() if client is not None else {}
