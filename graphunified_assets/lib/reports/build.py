"""All community reports of a run, regenerating only communities whose content hash changed.

A report is reused when the previous run wrote one for the same content hash with the same
generator; everything else is generated (in parallel for Claude). A community whose Claude report
fails gets the extractive report, marked so the next run tries Claude again. A community whose
whole context is at most ``condense_above_tokens`` (`llm.summarize_above_tokens`) gets the
extractive report without a call: there is little for an LLM to condense, and writing one report
per community, most of them a handful of entities, made reports 1.3-1.5 calls per chunk
(`bench/llm_calls.py`).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from graphunified_assets.lib.collector import collector_paused
from graphunified_assets.lib.reports.context import CommunityContext, community_context
from graphunified_assets.lib.reports.model import Report
from graphunified_assets.lib.rows_in_runs import take_in_runs
from graphunified_query.core.providers import count_tokens
from graphunified_query.core.providers.llm_client import rough_tokens
from graphunified_query.core.tables import COMMUNITY_REPORTS_SCHEMA

FALLBACK_SUFFIX = "+fallback"


class Reporter(Protocol):
    name: str

    def __call__(self, context: CommunityContext, size: int) -> Report: ...


@dataclass
class ReportBuild:
    table: pa.Table
    generated: int = 0
    reused: int = 0
    failures: list[str] = field(default_factory=list)  # "Community N: reason"


@collector_paused()  # every community's context as small objects, no cycles (0.8 s of collections at 12.6K)
def build_reports(
    communities: pa.Table,
    *,
    entities: pa.Table,
    relationships: pa.Table,
    reporter: Reporter,
    fallback: Reporter,
    previous: pa.Table | None = None,
    chunk_text: Callable[[str], str | None] = lambda _: None,
    concurrency: int = 1,
    max_context_chars: int = 24_000,
    condense_above_tokens: int = 0,
) -> ReportBuild:
    reusable = _reusable(previous, reporter.name)
    hashes = communities.column("content_hash").to_pylist()
    kept = [i for i, content_hash in enumerate(hashes) if content_hash in reusable]
    # Only the communities to write become Python rows: decoding all 15K communities and reports
    # of the 12.6K-passage home took 2-3 s of an update that writes a handful of reports.
    written = [i for i, content_hash in enumerate(hashes) if content_hash not in reusable]
    todo = communities.take(pa.array(written, pa.int64())).to_pylist()
    build = ReportBuild(table=COMMUNITY_REPORTS_SCHEMA.empty_table(), reused=len(kept))
    # Only the members of communities to write are read: decoding all 317K relationships of the
    # 12.6K-passage home took 7.5 s of an update that writes a handful of reports.
    entity_rows = rows_by_id(entities, {e for row in todo for e in row["entity_ids"]})
    relationship_rows = rows_by_id(relationships, {r for row in todo for r in row["relationship_ids"]})

    def generate(row: dict[str, Any]) -> tuple[Report, str]:
        context = community_context(
            row["entity_ids"],
            row["relationship_ids"],
            entities=entity_rows,
            relationships=relationship_rows,
            sentences_of=_source_sentences(row["entity_ids"], entity_rows, chunk_text),
            max_chars=max_context_chars,
        )
        if rough_tokens(context.as_text()) <= condense_above_tokens:
            return fallback(context, row["size"]), fallback.name
        try:
            return reporter(context, row["size"]), reporter.name
        except Exception as error:
            build.failures.append(f"{row['title']}: {error}")
            return fallback(context, row["size"]), fallback.name + FALLBACK_SUFFIX

    with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
        # Communities with one content hash (a parent whose one child holds all its members) share a report.
        reports = dict(zip((row["content_hash"] for row in todo), pool.map(generate, todo), strict=True))
    made = [_report_row(row, *reports[row["content_hash"]]) for row in todo]
    build.generated = len(todo)
    fresh = pa.Table.from_pylist(
        [
            {**row, "id": report_id(community["id"], row["full_content"])}
            for row, community in zip(made, todo, strict=True)
        ],
        schema=COMMUNITY_REPORTS_SCHEMA,
    )
    if hashes:
        reused = {i: reusable[hashes[i]] for i in kept}
        build.table = _in_communities_order(previous, reused, fresh, communities)
    return build


def rows_by_id(table: pa.Table, ids: set[str]) -> dict[str, dict[str, Any]]:
    """The rows of ``table`` whose ``id`` is in ``ids``, as dicts by id; no other row is decoded."""
    if not ids:
        return {}
    wanted = table.filter(pc.is_in(table.column("id"), pa.array(sorted(ids), pa.string())))
    return {row["id"]: row for row in wanted.to_pylist()}


def _reusable(previous: pa.Table | None, generator: str) -> dict[str, int]:
    """content hash -> the previous table's row holding its report by ``generator`` (the last)."""
    if previous is None:
        return {}
    hashes, generators = (previous.column(c).to_pylist() for c in ("content_hash", "generator"))
    return {h: i for i, (h, g) in enumerate(zip(hashes, generators, strict=True)) if g == generator}


def _in_communities_order(
    previous: pa.Table | None, reused: Mapping[int, int], fresh: pa.Table, communities: pa.Table
) -> pa.Table:
    """One report per community, in the communities' order: community ``i``'s is the previous
    report at row ``reused[i]``, else the next of ``fresh`` (written in that order). Taken as
    slices of their runs (`take_in_runs`: a take copied the 15K reports of the 12.6K home, about
    0.7 s of each update), then every row gets this run's placement and id, and a report written
    before token_count was a column its count."""
    base = COMMUNITY_REPORTS_SCHEMA.empty_table() if previous is None else _conformed(previous)
    source = np.full(len(communities), -1, np.int64)
    if reused:
        source[np.fromiter(reused.keys(), np.int64)] = np.fromiter(reused.values(), np.int64)
    written = source < 0
    source[written] = len(base) + np.arange(int(written.sum()))
    table = take_in_runs(pa.concat_tables([base, fresh]), source)
    columns = {name: table.column(name) for name in COMMUNITY_REPORTS_SCHEMA.names}
    for column, placed in PLACEMENT.items():
        columns[column] = communities.column(placed)
    contents = table.column("full_content").to_pylist()
    tokens = table.column("token_count").to_pylist()
    columns["token_count"] = pa.array(
        [count if count else count_tokens(text) for count, text in zip(tokens, contents, strict=True)],
        pa.int64(),
    )
    ids = communities.column("id").to_pylist()
    columns["id"] = pa.array([report_id(i, text) for i, text in zip(ids, contents, strict=True)], pa.string())
    return pa.table(columns, schema=COMMUNITY_REPORTS_SCHEMA)


def _conformed(previous: pa.Table) -> pa.Table:
    """``previous`` in this version's schema: a column added since is empty, one of an older type
    converted."""
    columns: dict[str, pa.Array | pa.ChunkedArray] = {}
    for column in COMMUNITY_REPORTS_SCHEMA:
        if column.name not in previous.column_names:
            columns[column.name] = pa.nulls(previous.num_rows, column.type)
        elif previous.schema.field(column.name).type != column.type:
            columns[column.name] = pa.array(previous.column(column.name).to_pylist(), column.type)
        else:
            columns[column.name] = previous.column(column.name)
    return pa.table(columns, schema=COMMUNITY_REPORTS_SCHEMA)


# A report's columns that say where its community sits in this run's hierarchy (numbers may shift
# between runs): the community table's column each is read from.
PLACEMENT = {
    "human_readable_id": "community",
    "community": "community",
    "level": "level",
    "parent": "parent",
    "children": "children",
    "period": "period",
    "size": "size",
}


def _placement(row: Mapping[str, Any]) -> dict[str, Any]:
    return {column: row[source] for column, source in PLACEMENT.items()}


def report_id(community_id: str, content: str) -> str:
    """Unique and stable: the community's id (its level and members) with the report's text.
    GraphRAG's SHA-512 of the text alone repeated when two communities had one report, e.g. a
    parent whose single child holds all its members (a 65-document build had duplicates)."""
    return hashlib.sha512(f"{community_id}\n{content}".encode()).hexdigest()


def _report_row(row: Mapping[str, Any], report: Report, generator: str) -> dict[str, Any]:
    content = report.markdown()
    return {
        "title": report.title,
        "summary": report.summary,
        "full_content": content,
        "rank": float(report.rating),
        "rating_explanation": report.rating_explanation,
        "findings": [f.model_dump() for f in report.findings],
        "full_content_json": report.as_json(),
        "content_hash": row["content_hash"],
        "generator": generator,
        "token_count": count_tokens(content),
        **_placement(row),
    }


_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def _source_sentences(
    entity_ids: Sequence[str],
    entities: Mapping[str, Mapping[str, Any]],
    chunk_text: Callable[[str], str | None],
) -> dict[str, list[str]]:
    """For the five most central members, the first sentence of their first chunk that names them."""
    central = sorted((entities[e] for e in entity_ids if e in entities), key=lambda e: -e["degree"])[:5]
    found: dict[str, list[str]] = {}
    for entity in central:
        for chunk_id in entity["text_unit_ids"][:3]:
            text = chunk_text(chunk_id) or ""
            sentence = next((s for s in _SENTENCE.split(text) if entity["title"] in s), None)
            if sentence:
                found[entity["id"]] = [" ".join(sentence.split())[:400]]
                break
    return found
