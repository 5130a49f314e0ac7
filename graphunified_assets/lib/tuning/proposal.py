"""What tuning proposes: domain, persona, entity and relationship types, few-shot examples.

Examples must be quoted from the sampled chunks (never invented): an example whose quote is not
in the sample, or whose entities are not in its quote, is dropped with the reason.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field, field_validator

_TYPE_NAME = re.compile(r"^[A-Z][A-Z0-9_]*$")
_SPACES = re.compile(r"\s+")
MAX_EXAMPLES = 3


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore", str_strip_whitespace=True)


class TypeSpec(_Model):
    name: str = Field(min_length=1)
    description: str = ""

    @field_validator("name")
    @classmethod
    def _upper_snake(cls, value: str) -> str:
        value = value.upper().replace(" ", "_")
        if not _TYPE_NAME.match(value):
            raise ValueError(f"type name {value!r} must be UPPER_SNAKE_CASE letters, digits, underscores")
        return value


class ExampleEntity(_Model):
    name: str = Field(min_length=1)
    type: str = Field(min_length=1)
    description: str = ""


class ExampleRelationship(_Model):
    source: str = Field(min_length=1)
    target: str = Field(min_length=1)
    type: str = Field(min_length=1)
    description: str = ""


class Example(_Model):
    quote: str = Field(min_length=20)
    entities: list[ExampleEntity] = Field(min_length=1)
    relationships: list[ExampleRelationship] = []


class Proposal(_Model):
    domain: str = Field(min_length=3)
    persona: str = Field(min_length=3)
    entity_types: list[TypeSpec] = Field(min_length=1)
    relationship_types: list[TypeSpec] = []
    examples: list[Example] = []


def _flat(text: str) -> str:
    return _SPACES.sub(" ", text).strip().casefold()


def checked_examples(proposal: Proposal, sample_texts: list[str]) -> tuple[list[Example], list[str]]:
    """The examples that are faithful to the corpus, and why each other one was dropped."""
    corpus = [_flat(t) for t in sample_texts]
    types = {t.name for t in proposal.entity_types}
    kept: list[Example] = []
    dropped: list[str] = []
    for n, example in enumerate(proposal.examples, start=1):
        quote = _flat(example.quote)
        names = {e.name for e in example.entities}
        problem = None
        if not any(quote in text for text in corpus):
            problem = "its quote is not in the sampled chunks"
        elif missing := [e.name for e in example.entities if _flat(e.name) not in quote]:
            problem = f"entities not in its quote: {', '.join(missing)}"
        elif wrong := [e.name for e in example.entities if e.type.upper() not in types]:
            problem = f"entities of a type not proposed: {', '.join(wrong)}"
        elif loose := [
            f"{r.source}->{r.target}" for r in example.relationships if {r.source, r.target} - names
        ]:
            problem = f"relationships between unrecorded entities: {', '.join(loose)}"
        if problem:
            dropped.append(f"example {n} dropped: {problem}")
        elif len(kept) < MAX_EXAMPLES:
            kept.append(example)
    return kept, dropped
