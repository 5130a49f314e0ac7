"""`chunks`: token-overlap chunks of each document (GraphRAG's `text_units`)."""

import json
from collections import Counter

import dagster as dg
import pyarrow as pa

from graphunified_assets.defs.catalog import logic_version
from graphunified_assets.defs.observability import numeric, stage_timing
from graphunified_assets.defs.partitions import per_document_asset
from graphunified_assets.defs.resources import GraphUnifiedResource
from graphunified_assets.lib.ingest import chunking
from graphunified_assets.lib.ingest.chunking import chunk_text, chunking_key
from graphunified_assets.lib.ingest.index_state import IndexState
from graphunified_assets.lib.risk.detector import assess_document
from graphunified_query.core.artifacts import CHUNKS
from graphunified_query.core.providers import load_tokenizer
from graphunified_query.core.tables import CHUNKS_SCHEMA, stable_int_id, text_hash


@per_document_asset(table=CHUNKS, group_name="ingest", code_version=logic_version(chunking))
def chunks(
    context: dg.AssetExecutionContext, graphunified: GraphUnifiedResource, documents: pa.Table
) -> pa.Table:
    """Token-overlap chunks with character offsets, heading paths and risk flags; ids = content hashes."""
    settings = graphunified.settings.chunking
    risk_settings = graphunified.settings.risk
    tokenizer = load_tokenizer()
    rows: list[dict[str, object]] = []
    risk_levels: Counter[str] = Counter()
    tokens = 0
    for document in documents.to_pylist():
        sections = [(tuple(s["path"]), s["start"], s["end"]) for s in json.loads(document["sections"])]
        pieces = chunk_text(
            document["text"],
            tokenizer=tokenizer,
            size=settings.size,
            overlap=settings.overlap,
            min_size=settings.min_size,
            sections=sections,
        )
        # Flagged here, once, so every query can filter on them without re-reading the text.
        risks = assess_document(
            document["id"], document["text"], [(p.start_char, p.end_char) for p in pieces], risk_settings
        )
        for piece, risk in zip(pieces, risks, strict=True):
            risk_levels[risk.level] += 1
            tokens += piece.n_tokens
            digest = text_hash(piece.text)
            chunk_id = text_hash(f"{document['id']}\x00{piece.index}\x00{digest}")
            rows.append(
                {
                    "id": chunk_id,
                    "human_readable_id": stable_int_id(chunk_id),
                    "text": piece.text,
                    "n_tokens": piece.n_tokens,
                    "document_id": document["id"],
                    "entity_ids": [],
                    "relationship_ids": [],
                    "covariate_ids": [],
                    "chunk_index": piece.index,
                    "start_char": piece.start_char,
                    "end_char": piece.end_char,
                    "section": piece.section,
                    "text_hash": digest,
                    "risk_flags": list(risk.flags),
                    "risk_level": risk.level,
                }
            )
    table = pa.Table.from_pylist(rows, schema=CHUNKS_SCHEMA)
    # With which chunker settings: a change of them makes these documents pending (`plan_update`).
    IndexState(graphunified.layout.index_state).mark_chunked(
        documents.column("id").to_pylist(), chunking_key(settings)
    )
    context.add_output_metadata(
        {
            **numeric(
                {
                    "chunks": len(rows),
                    "tokens": tokens,
                    "mean_tokens": round(tokens / len(rows), 1) if rows else 0.0,
                    "medium_risk_chunks": risk_levels["medium"],
                    "high_risk_chunks": risk_levels["high"],
                }
            ),
            **stage_timing(),
        }
    )
    return table
