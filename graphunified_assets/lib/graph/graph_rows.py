"""The rows of the entities, relationships and facts tables, made from resolved mentions.

`graph_elements` decides which rows a build makes (all of them, or an update's affected ones);
the functions here make each row the same way either way.
"""

from __future__ import annotations

import hashlib
from collections import Counter, defaultdict
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

import numpy as np
import pyarrow as pa

from graphunified_assets.lib.graph.relationship_keywords import ranked
from graphunified_assets.lib.graph.resolution import Resolution, ResolvedEntity, summarize_descriptions
from graphunified_query.core.tables import stable_int_id

Embed = Callable[[list[str]], np.ndarray]
Summarize = Callable[[str, list[str]], str]  # (name, fragments) -> one description
Triple = tuple[str, str, str]


@dataclass(slots=True)  # one per relationship: 317K at the 12.6K-passage scale
class Edge:
    weight: float = 0.0
    descriptions: list[str] = field(default_factory=list)
    # Lists, counted when the row is made: most edges have one or two mentions, and a set and two
    # Counters per edge were ~0.15 GB more at 317K edges.
    chunks: list[str] = field(default_factory=list)
    types: list[str] = field(default_factory=list)  # one per mention, in order
    keywords: list[str] = field(default_factory=list)  # every mention's, in order, for `ranked`


def aggregate_edges(
    rows: Iterable[dict[str, Any]], resolution: Resolution, touching: Collection[str] | None = None
) -> dict[tuple[str, str], Edge]:
    """Relationship mentions summed per pair of resolved entities; given ``touching``, only the
    pairs with an endpoint among those entity ids."""
    edges: dict[tuple[str, str], Edge] = defaultdict(Edge)
    for row in rows:
        # Relationships name their endpoints without types: the chunk's own entities supply them.
        types = {e["name"].lower(): e["type"] for e in row["entities"]}
        for rel in row["relationships"]:
            source = entity_id(resolution, rel["source"], types)
            target = entity_id(resolution, rel["target"], types)
            if source is None or target is None or source == target:
                continue
            if touching is not None and source not in touching and target not in touching:
                continue
            edge = edges[(min(source, target), max(source, target))]  # undirected, as in GraphRAG
            edge.weight += rel["strength"]
            edge.chunks.append(row["chunk_id"])
            edge.types.append(rel["type"])
            edge.keywords.extend(rel.get("keywords") or ())  # older extraction rows have none
            if rel["description"] and rel["description"] not in edge.descriptions:
                edge.descriptions.append(rel["description"])
    return edges


def entity_id(resolution: Resolution, name: str, types: dict[str, str]) -> str | None:
    type_ = types.get(name.lower())
    return resolution.id_for(name, type_) if type_ else None


@dataclass(frozen=True)
class Describer:
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


def batches(records: Iterable[dict[str, Any]], schema: pa.Schema) -> Iterator[pa.RecordBatch]:
    """Records as record batches of ``TABLE_SLICE`` rows: never every row as a dict at once."""
    records = iter(records)
    while chunk := list(islice(records, TABLE_SLICE)):
        yield pa.RecordBatch.from_pylist(chunk, schema=schema)


TABLE_SLICE = 16_384


def entity_rows(
    entities: Iterable[ResolvedEntity], degree: Counter[str], describe: Describer
) -> Iterator[dict[str, Any]]:
    for e in entities:
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


def relationship_rows(
    edges: dict[tuple[str, str], Edge], titles: dict[str, str], degree: Counter[str], describe: Describer
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


def fact_rows(by_triple: dict[Triple, set[str]], by_name: dict[str, str]) -> Iterator[dict[str, Any]]:
    for (subject, predicate, obj), chunks in sorted(by_triple.items()):
        yield {
            # The triple, not its text: ("Rudolph", "was", "elected King") and ("Rudolph",
            # "was elected", "King") read alike and are two facts (the 12.6K corpus has such pairs).
            "id": fact_id((subject, predicate, obj)),
            "text": f"{subject} {predicate} {obj}",
            "subject": subject,
            "predicate": predicate,
            "object": obj,
            "chunk_ids": sorted(chunks),
            "subject_id": by_name.get(subject.lower()),
            "object_id": by_name.get(obj.lower()),
        }


def fact_id(triple: Triple) -> str:
    return hashlib.sha256("\x1f".join(triple).encode()).hexdigest()[:32]


def names_to_ids(resolution: Resolution) -> dict[str, str]:
    """Lower-cased name -> entity id, for a fact's subject and object: titles first, then every
    surface name."""
    by_name = {title.lower(): entity_id for entity_id, title in resolution.titles.items()}
    for (name, _type), entity_id in resolution.entity_ids.items():
        by_name.setdefault(name.lower(), entity_id)
    return by_name
