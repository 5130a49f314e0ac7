"""Which contexts may reach the prompt: the risk ceiling and the metadata filters of one query."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from graphunified_query.context.facts import ContextFacts, section_matches
from graphunified_query.core.risk import RiskLevel, within
from graphunified_query.core.settings.model import QuerySettings


@dataclass(frozen=True)
class ContextFilter:
    max_risk_level: RiskLevel
    show_risky: bool  # admin/debug: nothing is left out for its risk (it is still marked)
    source_type: frozenset[str]  # empty: any
    has_code: bool | None
    document_ids: frozenset[str]  # empty: any
    section_prefix: str

    @classmethod
    def from_settings(cls, settings: QuerySettings) -> ContextFilter:
        return cls(
            max_risk_level=settings.max_risk_level,
            show_risky=settings.show_risky,
            source_type=frozenset(t.lower().lstrip(".") for t in settings.source_type),
            has_code=settings.has_code,
            document_ids=frozenset(settings.document_ids),
            section_prefix=settings.section_prefix.strip(),
        )

    def reason(self, facts: ContextFacts) -> str | None:
        """Why a context is left out (the first filter it fails), None when it is kept.

        Document filters need a document: a context no chunk backs fails them when they are set.
        """
        if not self.show_risky and not within(facts.risk_level, self.max_risk_level):
            return "risk"
        if self.document_ids and facts.document_id not in self.document_ids:
            return "document_ids"
        if self.source_type and facts.source_type not in self.source_type:
            return "source_type"
        if self.section_prefix and (
            facts.document_id is None or not section_matches(facts.section, self.section_prefix)
        ):
            return "section_prefix"
        if self.has_code is not None and facts.has_code != self.has_code:
            return "has_code"
        return None

    @property
    def narrows(self) -> bool:
        """A metadata filter is set: the search space is part of the index, not all of it."""
        return bool(self.source_type or self.document_ids or self.section_prefix) or self.has_code is not None

    def applied(self) -> dict[str, Any]:
        """The filters in force, for the answer's metadata (unset metadata filters left out)."""
        applied: dict[str, Any] = {"max_risk_level": self.max_risk_level, "show_risky": self.show_risky}
        if self.source_type:
            applied["source_type"] = sorted(self.source_type)
        if self.has_code is not None:
            applied["has_code"] = self.has_code
        if self.document_ids:
            applied["document_ids"] = sorted(self.document_ids)
        if self.section_prefix:
            applied["section_prefix"] = self.section_prefix
        return applied
