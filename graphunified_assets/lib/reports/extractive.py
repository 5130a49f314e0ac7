"""The offline report: built from the community's central entities, heaviest relationships and
source sentences, with a rating from its size relative to the largest community. No LLM."""

from __future__ import annotations

import math

from graphunified_assets.lib.graph.description_summary import summarize_descriptions
from graphunified_assets.lib.reports.context import CommunityContext
from graphunified_assets.lib.reports.model import Finding, Report

_MAX_FINDINGS = 6
_MAX_NAME = 90  # three names and the joining words stay under the report's 300-character title


def _short(name: str) -> str:
    return name if len(name) <= _MAX_NAME else name[: _MAX_NAME - 1] + "…"


class ExtractiveReporter:
    name = "extractive"

    def __init__(self, *, largest_community: int) -> None:
        self.largest = max(largest_community, 1)

    def __call__(self, context: CommunityContext, size: int) -> Report:
        entities = list(context.entities)
        # Dates are central to many communities but name none of them.
        names = [e["title"] for e in entities if e["type"] != "DATE"][:3] or [
            e["title"] for e in entities[:3]
        ]
        short = [_short(n) for n in names]
        title = " and ".join(short[:2]) if len(short) < 3 else f"{short[0]}, {short[1]} and {short[2]}"
        fragments = [e["description"] for e in entities[:5] if e["description"]]
        fragments += list(context.source_sentences)
        summary = summarize_descriptions(fragments, max_sentences=3) if fragments else ""
        summary = summary or f"A community of {size} entities including {', '.join(names)}."
        findings = [
            Finding(summary=f"{r['source']} — {r['target']}", explanation=r["description"])
            for r in context.relationships[: _MAX_FINDINGS // 2]
            if r["description"]
        ]
        for entity in entities:
            if len(findings) >= _MAX_FINDINGS:
                break
            if entity["description"]:
                explanation = summarize_descriptions([entity["description"]], max_sentences=2)
                findings.append(
                    Finding(summary=f"{entity['title']} ({entity['type']})", explanation=explanation)
                )
        if not findings:
            findings = [Finding(summary=title, explanation=summary)]
        rating = round(10 * math.log1p(size) / math.log1p(self.largest), 1)
        return Report(
            title=title or "Community",
            summary=summary,
            rating=rating,
            rating_explanation=(
                "Extractive rating: the community's size on a log scale relative to the largest "
                "community of the corpus (10 = largest)."
            ),
            findings=findings,
        )
