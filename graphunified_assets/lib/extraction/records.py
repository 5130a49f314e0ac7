"""What one extraction pass yields per chunk, whichever extractor produced it.

Records are pydantic models because LLM output crosses a trust boundary: each record is
validated on its own, so one malformed record is dropped and counted, not the whole chunk.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from pydantic import BaseModel, ConfigDict, Field, field_validator


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
