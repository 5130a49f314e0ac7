"""What one extraction pass yields per chunk, whichever extractor produced it.

Records are pydantic models because LLM output crosses a trust boundary: each record is
validated on its own, so one malformed record is dropped and counted, not the whole chunk.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from pydantic import BaseModel, ConfigDict, Field, field_validator

MAX_KEYWORDS = 8  # LightRAG asks for a few thematic words per relationship; more is noise


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore", str_strip_whitespace=True)


class ExtractedEntity(_Record):
    name: str = Field(min_length=1)
    type: str = Field(min_length=1)
    description: str = ""

    @field_validator("type")
    @classmethod
    def _upper(cls, value: str) -> str:
        return value.upper()


class ExtractedRelationship(_Record):
    source: str = Field(min_length=1)
    target: str = Field(min_length=1)
    type: str = "RELATED_TO"
    description: str = ""
    strength: float = Field(1.0, ge=0.0, le=10.0)
    # LightRAG's high-level keywords: the themes of the relation ("career", "film direction"),
    # not its entities. Empty when the extractor gives none (the offline extractor: the graph
    # stage then takes key phrases of the relationship's sentence, see `relationship_keywords`).
    keywords: tuple[str, ...] = ()

    @field_validator("keywords", mode="before")
    @classmethod
    def _keyword_list(cls, value: object) -> object:
        """A comma-separated string (a model's slip) is a list; blanks and repeats go; bounded."""
        items = value.split(",") if isinstance(value, str) else value
        if not isinstance(items, (list, tuple)):
            return items
        cleaned = [str(k).strip().lower() for k in items if isinstance(k, str) and k.strip()]
        return tuple(dict.fromkeys(cleaned))[:MAX_KEYWORDS]


class ExtractedFact(_Record):
    """A subject–predicate–object triple, as HippoRAG's OpenIE produces."""

    subject: str = Field(min_length=1)
    predicate: str = Field(min_length=1)
    object: str = Field(min_length=1)


@dataclass(frozen=True)
class ChunkText:
    chunk_id: str
    text: str
    title: str = ""  # the chunk's own heading (a JSONL passage's title): what the passage is about


@dataclass(frozen=True)
class ChunkExtraction:
    chunk_id: str
    entities: tuple[ExtractedEntity, ...] = ()
    relationships: tuple[ExtractedRelationship, ...] = ()
    facts: tuple[ExtractedFact, ...] = ()
    dropped_records: int = 0  # records that failed validation and were skipped
    extra: dict[str, float] = field(default_factory=dict)  # per-chunk counters (calls, tokens)


class Extractor(Protocol):
    """Turns chunks into entities, relationships and facts."""

    name: str

    def extract(self, chunks: Sequence[ChunkText]) -> list[ChunkExtraction]: ...
