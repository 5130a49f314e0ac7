"""From per-chunk extractions to the corpus-wide entities, relationships and facts tables.

Mentions are resolved into entities first; relationships and facts are then re-pointed at
the resolved entities and aggregated, so "Obama" in one chunk and "Barack Obama" in another
feed one node, and an edge seen in five chunks is one weighted relationship.

An update patches the last build's tables instead of remaking them (`GraphPatch`): the mention
groups of the last build (`GraphState`) lose the mentions of gone documents and gain those of
new ones; resolution runs again over every group (its candidate pairs remembered), and an entity
is *affected* when one of its groups changed or its groups are not the ones it had. Only the
affected entities' rows are made again, and only the relationships with an affected endpoint,
from the rows of the chunks that mention one: every other row is the last build's, with its
degree brought up to date. The tables are the ones a build from nothing makes (`tests/lib/
test_graph_patch.py` checks that on random updates).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from graphunified_assets.lib.collector import collector_paused
from graphunified_assets.lib.graph.description_summary import sentences
from graphunified_assets.lib.graph.graph_rows import (
    Describer,
    Embed,
    Summarize,
    aggregate_edges,
    entity_rows,
    fact_rows,
    names_to_ids,
    relationship_rows,
)
from graphunified_assets.lib.graph.graph_state import GraphState, Triple
from graphunified_assets.lib.graph.kept_rows import (
    kept_entities,
    kept_facts,
    merged,
    with_degrees,
    without,
)
from graphunified_assets.lib.graph.relationship_keywords import Phrases, gather_texts, with_keywords
from graphunified_assets.lib.graph.resolution import GroupKey, resolve_entities
from graphunified_assets.lib.graph.resolution_pairs import PairMemory
from graphunified_query.core.artifacts import ENTITIES, FACTS, RELATIONSHIPS
from graphunified_query.core.tables import ENTITIES_SCHEMA, FACTS_SCHEMA, RELATIONSHIPS_SCHEMA


@dataclass(frozen=True)
class GraphElements:
    entities: pa.Table
    relationships: pa.Table
    facts: pa.Table
    merges: dict[str, int]


@dataclass(frozen=True)
class GraphPatch:
    """An update of the build whose state and tables these are."""

    entities: pa.Table
    relationships: pa.Table
    facts: pa.Table
    gone: Collection[str] = ()  # documents removed or rewritten since
    added: Collection[str] = field(default_factory=set)  # chunk ids of documents new or rewritten


# Takes one table's pieces (consecutive rows) as they are made (entities, then relationships,
# then facts), e.g. writing them to disk: no table need be whole in memory. A sink that does not
# read a table's pieces leaves its rows unmade.
TableSink = Callable[[str, pa.Schema, Iterator[pa.Table]], None]


def build_graph_elements(
    rows: Iterable[dict[str, Any]],
    *,
    summarize_above: int,
    embed: Embed | None = None,
    embed_names: Embed | None = None,
    summarize: Summarize | None = None,
    memory: PairMemory | None = None,
    phrases: Phrases | None = None,
    state: GraphState | None = None,
    patch: GraphPatch | None = None,
) -> GraphElements:
    """The three tables in memory (tests, benchmarks): `write_graph_elements` into Arrow tables."""
    tables: dict[str, pa.Table] = {}

    def keep(name: str, schema: pa.Schema, pieces: Iterator[pa.Table]) -> None:
        tables[name] = pa.concat_tables([schema.empty_table(), *pieces])

    merges = write_graph_elements(
        rows,
        keep,
        summarize_above=summarize_above,
        embed=embed,
        embed_names=embed_names,
        summarize=summarize,
        memory=memory,
        phrases=phrases,
        state=state,
        patch=patch,
    )
    return GraphElements(tables[ENTITIES], tables[RELATIONSHIPS], tables[FACTS], merges)


@collector_paused()  # millions of small objects, no cycles: the collector cost 13 s of 42 at 12.6K
def write_graph_elements(
    rows: Iterable[dict[str, Any]],
    sink: TableSink,
    *,
    summarize_above: int,
    embed: Embed | None = None,
    embed_names: Embed | None = None,
    summarize: Summarize | None = None,
    memory: PairMemory | None = None,
    phrases: Phrases | None = None,
    state: GraphState | None = None,
    patch: GraphPatch | None = None,
) -> dict[str, int]:
    """Resolves and aggregates extraction rows and hands ``sink`` the entities, relationships and
    facts tables, batch by batch; returns the mentions merged per resolution rule.

    ``embed`` ranks the sentences of extractive summaries; ``embed_names`` (default ``embed``)
    embeds the names resolution compares against its cosine threshold (the model variant it was
    calibrated on: `calibrated_embedder`).

    ``rows`` are extraction rows (see EXTRACTIONS_SCHEMA) of every live document, re-iterable:
    `ExtractionRows` decodes them a slice at a time (read twice, never held); ``memory`` carries
    resolution's candidate pairs from the last build (an update compares only new names);
    ``phrases`` gives relationships the extractor left without keywords their sentence's theme
    phrases. ``state`` (empty, or the last build's with its tables as ``patch``) is brought up to
    date for the next update."""
    state = state if state is not None else GraphState()
    state.unpack()
    touched: set[GroupKey] = set()
    triples: set[Triple] = set()
    if patch is None:
        if not state.is_empty:
            raise ValueError("a build from nothing starts from an empty state; an update needs its patch")
        added = rows
    else:
        touched, triples = state.remove_documents(patch.gone)
        added = rows_of(rows, patch.added)
    # A build from nothing gathers the descriptions to parse for keywords in its one pass over
    # every row; an update gathers those of the rows it aggregates again, below.
    texts: dict[str, None] | None = {} if phrases is not None and patch is None else None
    _add_rows(state, added, texts, touched, triples)
    resolution = resolve_entities(state.groups, embed=embed_names or embed, memory=memory)
    affected = None if patch is None else _affected(state.entity_of, resolution.groups, touched)
    state.entity_of = dict(resolution.groups)
    if affected is None:
        entities, edge_rows = list(resolution.entities), rows
    else:
        entities = list(resolution.entities_of(affected))
        chunks = {
            c for key, i in resolution.groups.items() if i in affected for c in state.groups[key].chunks
        }
        edge_rows = rows_of(rows, chunks)
    by_triple = state.chunks_of(None if patch is None else triples)
    facts = state.fact_count()
    state.pack()  # not read again: the step's peak is ahead
    if memory is not None:
        memory.spill()  # its name vectors, likewise
    if phrases is not None:
        if texts is None:
            texts = {}
            _add_rows(None, edge_rows, texts, touched, triples)
        edge_rows = with_keywords(edge_rows, phrases, list(texts))
        del texts
    edges = aggregate_edges(edge_rows, resolution, affected)
    degree: Counter[str] = Counter()
    for source, target in edges:
        degree[source] += 1
        degree[target] += 1
    kept_relationships = None  # the last build's relationships without an affected endpoint
    if patch is not None and affected is not None:
        ends = ("source_id", "target_id")
        kept_relationships = without(patch.relationships, RELATIONSHIPS_SCHEMA, affected, ends)
        degree.update(_counts(kept_relationships, ends))
    if embed is not None and summarize is None:
        fragment_lists: list[Sequence[str]] = [e.descriptions for e in entities]
        fragment_lists += [edge.descriptions for edge in edges.values()]
        embed = _prefetched(embed, [f for f in fragment_lists if len(f) > summarize_above])
        del fragment_lists  # would keep every edge's descriptions after the edge is freed
    describe = Describer(summarize_above, embed, summarize)
    # Each table is made as the sink takes it: at 12.6K passages, holding the three to the end
    # was ~0.3 GB of the graph stage's peak.
    made = entity_rows(entities, degree, describe)
    del entities
    kept_rows = None if patch is None or affected is None else kept_entities(patch.entities, affected, degree)
    sink(ENTITIES, ENTITIES_SCHEMA, merged(ENTITIES, kept_rows, made, len(resolution)))
    made = relationship_rows(edges, resolution.titles, degree, describe)
    kept_rows = None if kept_relationships is None else with_degrees(kept_relationships, degree)
    del kept_relationships
    sink(RELATIONSHIPS, RELATIONSHIPS_SCHEMA, merged(RELATIONSHIPS, kept_rows, made))
    by_name = names_to_ids(resolution)
    kept_rows = None if patch is None else kept_facts(patch.facts, triples, by_name)
    made = fact_rows(by_triple, by_name)
    sink(FACTS, FACTS_SCHEMA, merged(FACTS, kept_rows, made, facts if patch else None))
    return dict(resolution.merges)


def _add_rows(
    state: GraphState | None,
    rows: Iterable[dict[str, Any]],
    texts: dict[str, None] | None,
    touched: set[GroupKey],
    triples: set[Triple],
) -> None:
    """One pass over ``rows``: their mentions and facts into ``state``, the descriptions to
    parse for keywords into ``texts``. A function, so that no row outlives the pass."""
    for row in rows:
        if texts is not None:
            gather_texts(row, texts)
        if state is not None:
            state.add_row(row, touched, triples)


def _counts(table: pa.Table, columns: Sequence[str]) -> dict[str, int]:
    """How often each value occurs in ``columns``, counted in Arrow (the 316K kept relationships'
    ends as Python strings took 0.2 s of every update at 12.6K passages)."""
    counts = pc.value_counts(pa.chunked_array([c for name in columns for c in table.column(name).chunks]))
    return dict(zip(counts.field("values").to_pylist(), counts.field("counts").to_pylist(), strict=True))


def rows_of(rows: Iterable[dict[str, Any]], chunks: Collection[str]) -> Iterable[dict[str, Any]]:
    """The rows of ``chunks``, in ``rows``' order, re-iterable."""
    subset = getattr(rows, "rows_of", None)
    if subset is not None:  # `ExtractionRows`: filtered in Arrow, decoded a slice at a time
        return subset(chunks)
    return [row for row in rows if row["chunk_id"] in chunks]


def _affected(before: dict[GroupKey, str], after: Mapping[GroupKey, str], touched: set[GroupKey]) -> set[str]:
    """Entities (ids before and after) whose rows may differ: those holding a changed group (a
    group gone with its last chunk too), and those whose groups are not the ones they had (a
    merge, a split, a new canonical name)."""
    affected = {after[key] for key in touched if key in after} | {
        before[key] for key in touched if key in before
    }
    for key, entity in after.items():
        previous = before.get(key)
        if previous != entity:
            affected.add(entity)
            if previous is not None:
                affected.add(previous)
    return affected


def texts_to_embed(rows: Iterable[dict[str, Any]], *, sentences_too: bool) -> tuple[list[str], list[str]]:
    """What `write_graph_elements` will embed of these rows, first seen first, as (names,
    sentences): every entity name as resolution's name neighbours read it (a group's label is one
    of its surface names) and, with ``sentences_too`` (extractive summaries), every sentence of
    every entity and relationship description (a summary ranks the sentences of those with many).
    Apart because they are embedded apart: names by the calibrated variant resolution compares
    with (and by the tables' variant too when it is another), sentences by the tables' model.
    Embedding them in the document runs puts the model's graph work there, per document, and the
    global step finds every vector cached. More than the global step would embed: the sentences of
    descriptions too short to summarize (offline those are mostly the relationship sentences that
    composed relationship vectors embed anyway)."""
    names: dict[str, None] = {}
    texts: dict[str, None] = {}
    for row in rows:
        for e in row["entities"]:
            names.setdefault(" ".join(e["name"].split()))
        if not sentences_too:
            continue
        fragments = [e["description"] for e in row["entities"] if e["description"]]
        fragments += [r["description"] for r in row["relationships"] if r["description"]]
        texts.update(dict.fromkeys(sentences(fragments)))
    names.pop("", None)
    texts.pop("", None)
    return list(names), list(texts)


def _prefetched(embed: Embed, fragment_lists: Sequence[Sequence[str]]) -> Embed:
    """Every sentence the extractive summaries will rank, embedded in one batched call.

    Summarizing entity by entity meant one embedding call (and cache lookup) of a few sentences
    per entity: ~90K tiny calls at the 12.6K-passage scale.
    """
    units = list(dict.fromkeys(u for fragments in fragment_lists for u in sentences(list(fragments))))
    vectors = dict(zip(units, embed(units), strict=True)) if units else {}

    def lookup(texts: list[str]) -> np.ndarray:
        missing = [t for t in texts if t not in vectors]
        if missing:
            vectors.update(zip(missing, embed(missing), strict=True))
        return np.stack([vectors[t] for t in texts])

    return lookup
