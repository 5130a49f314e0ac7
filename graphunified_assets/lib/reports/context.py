"""What a report writer sees about one community: its most central entities and relationships.

Members are ranked by degree (as GraphRAG does), then packed into a character budget so a huge
community costs a bounded prompt; ``source_sentences`` add the passages' own words.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

# The columns of the entity and relationship rows a context is made of (`community_context`, the
# reporters): `community_reports` reads only these (at 12.6K passages the relationships' other
# columns, their chunk ids and keywords among them, were 250 MB of the step's Python rows).
ENTITY_COLUMNS = ["id", "title", "type", "description", "degree", "text_unit_ids"]
RELATIONSHIP_COLUMNS = ["id", "source", "target", "description", "weight"]


@dataclass(frozen=True)
class CommunityContext:
    entities: tuple[Mapping[str, Any], ...]  # entity rows, most central first
    relationships: tuple[Mapping[str, Any], ...]  # inner relationship rows, heaviest first
    source_sentences: tuple[str, ...]

    def as_text(self) -> str:
        lines = ["Entities", "id,entity,type,description"]
        lines += [
            f"{i},{e['title']},{e['type']},{_one_line(e['description'])}" for i, e in enumerate(self.entities)
        ]
        lines += ["", "Relationships", "id,source,target,description"]
        lines += [
            f"{i},{r['source']},{r['target']},{_one_line(r['description'])}"
            for i, r in enumerate(self.relationships)
        ]
        if self.source_sentences:
            lines += ["", "Source sentences"] + [f"- {s}" for s in self.source_sentences]
        return "\n".join(lines)


def community_context(
    entity_ids: Sequence[str],
    relationship_ids: Sequence[str],
    *,
    entities: Mapping[str, Mapping[str, Any]],
    relationships: Mapping[str, Mapping[str, Any]],
    sentences_of: Mapping[str, Sequence[str]] | None = None,
    max_chars: int = 24_000,
) -> CommunityContext:
    members = sorted(
        (entities[e] for e in entity_ids if e in entities), key=lambda e: (-e["degree"], e["title"])
    )
    edges = sorted(
        (relationships[r] for r in relationship_ids if r in relationships),
        key=lambda r: (-r["weight"], r["source"], r["target"]),
    )
    budget = max_chars
    kept_entities: list[Mapping[str, Any]] = []
    kept_edges: list[Mapping[str, Any]] = []
    sentences: list[str] = []
    for entity in members:
        budget -= len(entity["title"]) + len(entity["description"]) + 20
        if budget < 0 and kept_entities:
            break
        kept_entities.append(entity)
    for edge in edges:
        budget -= len(edge["source"]) + len(edge["target"]) + len(edge["description"]) + 20
        if budget < 0:
            break
        kept_edges.append(edge)
    for entity in kept_entities[:5]:
        for sentence in (sentences_of or {}).get(entity["id"], ())[:1]:
            budget -= len(sentence)
            if budget < 0:
                break
            if sentence not in sentences:
                sentences.append(sentence)
    return CommunityContext(tuple(kept_entities), tuple(kept_edges), tuple(sentences))


def _one_line(text: str) -> str:
    return " ".join(text.split()).replace(",", ";")
