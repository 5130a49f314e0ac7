"""From per-chunk extractions to the corpus-wide entities, relationships and facts tables.

Mentions are resolved into entities first; relationships and facts are then re-pointed at
the resolved entities and aggregated, so "Obama" in one chunk and "Barack Obama" in another
feed one node, and an edge seen in five chunks is one weighted relationship.
"""

from __future__ import annotations

import hashlib
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

import numpy as np
import pyarrow as pa

from graphunified_assets.lib.collector import collector_paused
from graphunified_assets.lib.graph.description_summary import sentences
from graphunified_assets.lib.graph.relationship_keywords import Phrases, gather_texts, ranked, with_keywords
from graphunified_assets.lib.graph.resolution import (
    EntityMention,
    Resolution,
    resolve_entities,
    summarize_descriptions,
)
from graphunified_assets.lib.graph.resolution_pairs import PairMemory
from graphunified_query.core.artifacts import ENTITIES, FACTS, RELATIONSHIPS
from graphunified_query.core.tables import ENTITIES_SCHEMA, FACTS_SCHEMA, RELATIONSHIPS_SCHEMA, stable_int_id

Embed = Callable[[list[str]], np.ndarray]
Summarize = Callable[[str, list[str]], str]  # (name, fragments) -> one description


@dataclass(slots=True)  # one per relationship: 317K at the 12.6K-passage scale
class _Edge:
    weight: float = 0.0
    descriptions: list[str] = field(default_factory=list)
    # Lists, counted when the row is made: most edges have one or two mentions, and a set and two
    # Counters per edge were ~0.15 GB more at 317K edges.
    chunks: list[str] = field(default_factory=list)
    types: list[str] = field(default_factory=list)  # one per mention, in order
    keywords: list[str] = field(default_factory=list)  # every mention's, in order, for `ranked`


@dataclass(frozen=True)
class GraphElements:
    entities: pa.Table
    relationships: pa.Table
    facts: pa.Table
    merges: dict[str, int]


# Takes one table's record batches as they are made (entities, then relationships, then facts),
# e.g. writing them to disk: no table need be whole in memory. A sink that does not read a
# table's batches leaves its rows unmade.
TableSink = Callable[[str, pa.Schema, Iterator[pa.RecordBatch]], None]


def build_graph_elements(
    rows: Iterable[dict[str, Any]],
    *,
    summarize_above: int,
    embed: Embed | None = None,
    summarize: Summarize | None = None,
    memory: PairMemory | None = None,
    phrases: Phrases | None = None,
) -> GraphElements:
    """The three tables in memory (tests, benchmarks): `write_graph_elements` into Arrow tables."""
    tables: dict[str, pa.Table] = {}

    def keep(name: str, schema: pa.Schema, batches: Iterator[pa.RecordBatch]) -> None:
        tables[name] = pa.Table.from_batches(list(batches), schema=schema)

    merges = write_graph_elements(
        rows,
        keep,
        summarize_above=summarize_above,
        embed=embed,
        summarize=summarize,
        memory=memory,
        phrases=phrases,
    )
    return GraphElements(tables[ENTITIES], tables[RELATIONSHIPS], tables[FACTS], merges)


@collector_paused()  # millions of small objects, no cycles: the collector cost 13 s of 42 at 12.6K
def write_graph_elements(
    rows: Iterable[dict[str, Any]],
    sink: TableSink,
    *,
    summarize_above: int,
    embed: Embed | None = None,
    summarize: Summarize | None = None,
    memory: PairMemory | None = None,
    phrases: Phrases | None = None,
) -> dict[str, int]:
    """Resolves and aggregates extraction rows and hands ``sink`` the entities, relationships and
    facts tables, batch by batch; returns the mentions merged per resolution rule.

    ``rows`` are extraction rows (see EXTRACTIONS_SCHEMA) of every live document, re-iterable:
    `ExtractionRows` decodes them a slice at a time (read twice, never held); ``memory`` carries
    resolution's candidate pairs from the last build (an update compares only new names);
    ``phrases`` gives relationships the extractor left without keywords their sentence's theme
    phrases."""
    by_triple: dict[tuple[str, str, str], set[str]] = defaultdict(set)
    # The mentions pass also gathers the descriptions to parse for keywords: a separate pass
    # decoded every extraction row once more (4 s of a 12.6K-home update).
    texts: dict[str, None] | None = {} if phrases is not None else None
    resolution = resolve_entities(_mentions(rows, by_triple, texts), embed=embed, memory=memory)
    if phrases is not None and texts is not None:
        rows = with_keywords(rows, phrases, list(texts))
        del texts
    edges = _aggregate_edges(rows, resolution)
    degree: Counter[str] = Counter()
    for source, target in edges:
        degree[source] += 1
        degree[target] += 1
    if embed is not None and summarize is None:
        fragment_lists: list[Sequence[str]] = [e.descriptions for e in resolution.entities]
        fragment_lists += [edge.descriptions for edge in edges.values()]
        embed = _prefetched(embed, [f for f in fragment_lists if len(f) > summarize_above])
        del fragment_lists  # would keep every edge's descriptions after the edge is freed
    describe = _Describer(summarize_above, embed, summarize)
    # Each table is made as the sink takes it: at 12.6K passages, holding the three to the end
    # was ~0.3 GB of the graph stage's peak.
    sink(ENTITIES, ENTITIES_SCHEMA, _batches(_entity_rows(resolution, degree, describe), ENTITIES_SCHEMA))
    titles = {e.id: e.title for e in resolution.entities}
    relationships = _relationship_rows(edges, titles, degree, describe)
    sink(RELATIONSHIPS, RELATIONSHIPS_SCHEMA, _batches(relationships, RELATIONSHIPS_SCHEMA))
    sink(FACTS, FACTS_SCHEMA, _batches(_fact_rows(by_triple, resolution), FACTS_SCHEMA))
    return dict(resolution.merges)


def texts_to_embed(rows: Iterable[dict[str, Any]], *, sentences_too: bool) -> list[str]:
    """What `write_graph_elements` will embed of these rows, first seen first: every entity name
    as resolution's name neighbours read it (a group's label is one of its surface names) and,
    with ``sentences_too`` (extractive summaries), every sentence of every entity and relationship
    description (a summary ranks the sentences of those with many). Embedding them in the
    document runs puts the model's graph work there, per document, and the global step finds
    every vector cached. More than the global step would embed: the sentences of descriptions
    too short to summarize (offline those are mostly the relationship sentences that composed
    relationship vectors embed anyway)."""
    texts: dict[str, None] = {}
    for row in rows:
        for e in row["entities"]:
            texts.setdefault(" ".join(e["name"].split()))
        if not sentences_too:
            continue
        fragments = [e["description"] for e in row["entities"] if e["description"]]
        fragments += [r["description"] for r in row["relationships"] if r["description"]]
        texts.update(dict.fromkeys(sentences(fragments)))
    texts.pop("", None)
    return list(texts)


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


def _mentions(
    rows: Iterable[dict[str, Any]],
    by_triple: dict[tuple[str, str, str], set[str]],
    texts: dict[str, None] | None = None,
) -> Iterator[EntityMention]:
    """Every entity mention, read in the same pass that gathers each fact's chunks (and, given
    ``texts``, the relationship descriptions `with_keywords` parses)."""
    for row in rows:
        if texts is not None:
            gather_texts(row, texts)
        for fact in row["facts"]:
            by_triple[(fact["subject"], fact["predicate"], fact["object"])].add(row["chunk_id"])
        for e in row["entities"]:
            yield EntityMention(e["name"], e["type"], e["description"], row["chunk_id"])


def _aggregate_edges(rows: Iterable[dict[str, Any]], resolution: Resolution) -> dict[tuple[str, str], _Edge]:
    edges: dict[tuple[str, str], _Edge] = defaultdict(_Edge)
    for row in rows:
        # Relationships name their endpoints without types: the chunk's own entities supply them.
        types = {e["name"].lower(): e["type"] for e in row["entities"]}
        for rel in row["relationships"]:
            source = _entity_id(resolution, rel["source"], types)
            target = _entity_id(resolution, rel["target"], types)
            if source is None or target is None or source == target:
                continue
            edge = edges[(min(source, target), max(source, target))]  # undirected, as in GraphRAG
            edge.weight += rel["strength"]
            edge.chunks.append(row["chunk_id"])
            edge.types.append(rel["type"])
            edge.keywords.extend(rel.get("keywords") or ())  # older extraction rows have none
            if rel["description"] and rel["description"] not in edge.descriptions:
                edge.descriptions.append(rel["description"])
    return edges


def _entity_id(resolution: Resolution, name: str, types: dict[str, str]) -> str | None:
    type_ = types.get(name.lower())
    return resolution.id_for(name, type_) if type_ else None


@dataclass(frozen=True)
class _Describer:
    """Joins few fragments; summarizes many (with the LLM when given, else extractively)."""

    summarize_above: int
    embed: Embed | None
    summarize: Summarize | None

    def __call__(self, name: str, fragments: Sequence[str]) -> str:
        if len(fragments) <= self.summarize_above:
            return "\n".join(fragments)
        if self.summarize is not None:
            return self.summarize(name, list(fragments))
        return summarize_descriptions(list(fragments), embed=self.embed)


def _batches(records: Iterable[dict[str, Any]], schema: pa.Schema) -> Iterator[pa.RecordBatch]:
    """Records as record batches of ``TABLE_SLICE`` rows: never every row as a dict at once."""
    records = iter(records)
    while chunk := list(islice(records, TABLE_SLICE)):
        yield pa.RecordBatch.from_pylist(chunk, schema=schema)


TABLE_SLICE = 16_384


def _entity_rows(
    resolution: Resolution, degree: Counter[str], describe: _Describer
) -> Iterator[dict[str, Any]]:
    for e in resolution.entities:
        yield {
            "id": e.id,
            "human_readable_id": stable_int_id(e.id),
            "title": e.title,
            "type": e.type,
            "description": describe(e.title, e.descriptions),
            "text_unit_ids": list(e.text_unit_ids),
            "frequency": e.frequency,
            "degree": degree[e.id],
            "merged_from": list(e.merged_from),
        }


def _relationship_rows(
    edges: dict[tuple[str, str], _Edge], titles: dict[str, str], degree: Counter[str], describe: _Describer
) -> Iterator[dict[str, Any]]:
    for source, target in sorted(edges):
        edge = edges.pop((source, target))  # freed once its row is made: edges and table never both whole
        edge_id = hashlib.sha256(f"{source}|{target}".encode()).hexdigest()[:32]
        yield {
            "id": edge_id,
            "human_readable_id": stable_int_id(edge_id),
            "source": titles[source],
            "target": titles[target],
            "description": describe(f"{titles[source]} - {titles[target]}", edge.descriptions),
            "weight": edge.weight,
            "combined_degree": degree[source] + degree[target],
            "text_unit_ids": sorted(set(edge.chunks)),
            "source_id": source,
            "target_id": target,
            "type": Counter(edge.types).most_common(1)[0][0],
            "keywords": ranked(Counter(edge.keywords)),
        }


def _fact_rows(
    by_triple: dict[tuple[str, str, str], set[str]], resolution: Resolution
) -> Iterator[dict[str, Any]]:
    by_name = {e.title.lower(): e.id for e in resolution.entities}
    for (name, _type), entity_id in resolution.entity_ids.items():
        by_name.setdefault(name.lower(), entity_id)
    for (subject, predicate, obj), chunks in sorted(by_triple.items()):
        yield {
            # The triple, not its text: ("Rudolph", "was", "elected King") and ("Rudolph",
            # "was elected", "King") read alike and are two facts (the 12.6K corpus has such pairs).
            "id": hashlib.sha256(f"{subject}\x1f{predicate}\x1f{obj}".encode()).hexdigest()[:32],
            "text": f"{subject} {predicate} {obj}",
            "subject": subject,
            "predicate": predicate,
            "object": obj,
            "chunk_ids": sorted(chunks),
            "subject_id": by_name.get(subject.lower()),
            "object_id": by_name.get(obj.lower()),
        }
