"""`documents`: each input document parsed into text plus its section headings."""

import json
from pathlib import PurePosixPath

import dagster as dg
import pyarrow as pa

from graphunified_assets.defs.assets.raw_documents import RAW_DOCUMENTS
from graphunified_assets.defs.observability import numeric, stage_timing
from graphunified_assets.defs.partitions import per_document_asset
from graphunified_assets.defs.resources import GraphUnifiedResource
from graphunified_assets.lib.ingest.index_state import IndexState
from graphunified_assets.lib.ingest.readers import ParsedDocument, read_documents
from graphunified_assets.lib.ingest.sources import scan_input
from graphunified_assets.ops.index_progress import work_progress
from graphunified_query.core.aliases import write_aliases
from graphunified_query.core.artifacts import DOCUMENTS
from graphunified_query.core.tables import DOCUMENTS_SCHEMA, metadata_entries, stable_int_id

STAGE = "documents"


@per_document_asset(
    table=DOCUMENTS, group_name="ingest", metadata={"document_column": "id"}, deps=[RAW_DOCUMENTS]
)
def documents(context: dg.AssetExecutionContext, graphunified: GraphUnifiedResource) -> pa.Table:
    """Input documents (txt, md, jsonl, pdf) parsed into text with section headings."""
    keys = context.partition_keys
    input_dir = graphunified.input_path
    scan = scan_input(input_dir, graphunified.layout.input_scan)
    sources = [scan.documents[k] for k in keys if k in scan.documents]
    progress = work_progress(graphunified.settings.logging, "documents parsed", "documents")
    parsed, problems = read_documents(sources, input_dir, progress)
    failures = [(p.source, p.reason) for p in problems]
    failures += [
        (k, f"no longer in {input_dir}; it is removed on the next sensor tick or `index`")
        for k in keys
        if k not in scan.documents
    ]
    state = IndexState(graphunified.layout.index_state)
    # Before the IO manager marks them indexed: what this run adds and what it replaces.
    indexed = state.indexed_hashes()
    new = sum(1 for d in parsed if d.document_id not in indexed)
    changed = sum(1 for d in parsed if indexed.get(d.document_id, d.content_hash) != d.content_hash)
    state.clear_failures(STAGE, [d.document_id for d in parsed])
    state.record_failures(STAGE, failures)
    parsed_ids = {d.document_id for d in parsed}
    unparsed = {s.document_id: s.content_hash for s in sources if s.document_id not in parsed_ids}
    state.mark_parse_failed(unparsed, parsed_ids)
    for source, reason in failures:
        context.log.warning(f"skipped {source}: {reason}")
    # The whole folder's map, every run: a copy added or removed changes its original's hash,
    # so some run always follows a change to it (see lib/sources.py).
    write_aliases(graphunified.layout, scan.aliases())
    for copy, original in scan.duplicates.items():
        if original in keys:
            context.log.info(f"{copy}: same content as {original}; indexed once, cited as both")
    # No per-partition metadata here: Dagster lists every dynamic partition on each such call,
    # which made a 12.6K-document run quadratic. The content hash is each raw_documents
    # partition's data version already.
    context.add_output_metadata(
        {
            **numeric(
                {
                    "parsed": len(parsed),
                    "failed": len(failures),
                    "new_documents": new,
                    "changed_documents": changed,
                    "characters": sum(len(d.text) for d in parsed),
                }
            ),
            **stage_timing(),
        }
    )
    return documents_table(parsed)


def documents_table(parsed: list[ParsedDocument]) -> pa.Table:
    rows = [
        {
            "id": d.document_id,
            "human_readable_id": stable_int_id(d.document_id),
            "title": d.title,
            "text": d.text,
            "text_unit_ids": [],  # filled by the GraphRAG export, which sees the chunks
            "created_at": d.modified_at,
            "metadata": metadata_entries(d.metadata),
            "filename": PurePosixPath(d.source_path).name,
            "source_path": d.source_path,
            "format": d.format,
            "content_hash": d.content_hash,
            "sections": json.dumps(
                [{"path": list(s.path), "start": s.start, "end": s.end} for s in d.sections]
            ),
        }
        for d in parsed
    ]
    return pa.Table.from_pylist(rows, schema=DOCUMENTS_SCHEMA)
