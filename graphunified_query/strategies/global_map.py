"""The map step of global search: one community report → the points in it that answer the query.

With an LLM, each selected report is one parallel call returning scored points (GraphRAG's map);
offline, the report's summary and findings are ranked by similarity to the query. Points scored 0
("no relevant information") are dropped; the answer generator is the reduce step.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from graphunified_query.core.indexes.report_points import ReportPoints, report_points
from graphunified_query.core.providers.embedding import Embedder
from graphunified_query.core.providers.llm import LLM

if TYPE_CHECKING:  # a type only: the anthropic SDK takes seconds to import
    pass

_PROMPTS = Path(__file__).resolve().parents[1] / "prompts"
_TOOL = {
    "name": "map_points",
    "description": "Record the points of the report that help answer the question.",
    "input_schema": {
        "type": "object",
        "properties": {
            "points": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"description": {"type": "string"}, "score": {"type": "number"}},
                    "required": ["description", "score"],
                },
            }
        },
        "required": ["points"],
    },
}


@dataclass(frozen=True)
class Point:
    text: str
    score: float  # 0..1


class Mapper(Protocol):
    llm_calls: int

    def map(self, query: str, reports: list[Mapping[str, Any]]) -> list[list[Point]]: ...


class LLMMapper:
    def __init__(self, client: LLM, *, concurrency: int = 4, max_tokens: int = 1000) -> None:
        self.client = client
        self.concurrency = concurrency
        self.max_tokens = max_tokens
        self.llm_calls = 0
        instructions = (_PROMPTS / "global_map.md").read_text(encoding="utf-8")
        self._system = [{"type": "text", "text": instructions, "cache_control": {"type": "ephemeral"}}]

    def map(self, query: str, reports: list[Mapping[str, Any]]) -> list[list[Point]]:
        with ThreadPoolExecutor(max_workers=self.concurrency) as pool:
            return list(pool.map(lambda report: self._map_one(query, report), reports))

    def _map_one(self, query: str, report: Mapping[str, Any]) -> list[Point]:
        response = self.client.create(
            system=self._system,
            messages=[{"role": "user", "content": f"Question: {query}\n\nReport:\n{report['full_content']}"}],
            tools=[_TOOL],
            tool_choice={"type": "tool", "name": "map_points"},
            max_tokens=self.max_tokens,
        )
        self.llm_calls += 0 if response.cached else 1
        payload = response.tool_input("map_points") or {}
        points = []
        for item in payload.get("points", []) if isinstance(payload, dict) else []:
            try:
                text, score = str(item["description"]).strip(), float(item["score"])
            except (KeyError, TypeError, ValueError):
                continue  # one malformed point is dropped, not the report
            if text and score > 0:
                points.append(Point(text, min(score, 100.0) / 100.0))
        return points


class ExtractiveMapper:
    """Ranks a report's summary and findings against the query by embedding similarity.

    With ``points`` (the index's precomputed point vectors) only the query is embedded; a report
    they do not hold as it is now is embedded here, once per process."""

    llm_calls = 0

    def __init__(
        self,
        embedder: Embedder,
        *,
        min_similarity: float = 0.2,
        max_points: int = 3,
        embed_query: Callable[[str], np.ndarray] | None = None,
        points: ReportPoints | None = None,
    ) -> None:
        self.embedder = embedder
        # The engine's cached query embedding when given (the retriever embedded the query already).
        self.embed_query = embed_query or (lambda query: embedder.embed([query], kind="query")[0])
        self.min_similarity = min_similarity
        self.max_points = max_points
        self.points = points
        self._vectors: dict[str, np.ndarray] = {}  # report points recur across queries: embed each once

    def map(self, query: str, reports: list[Mapping[str, Any]]) -> list[list[Point]]:
        candidates = [report_points(report) for report in reports]
        if not any(candidates):
            return [[] for _ in reports]
        q = self.embed_query(query)
        stored = [self._stored(report, points) for report, points in zip(reports, candidates, strict=True)]
        missing = list(
            dict.fromkeys(
                t
                for points, vectors in zip(candidates, stored, strict=True)
                if vectors is None
                for t in points
                if t not in self._vectors
            )
        )
        if missing:
            self._vectors.update(zip(missing, self.embedder.embed(missing), strict=True))
        blocks = [
            vectors if vectors is not None else np.stack([self._vectors[t] for t in points])
            for points, vectors in zip(candidates, stored, strict=True)
            if points
        ]
        similarities = iter(np.concatenate(blocks) @ q)
        mapped = []
        for points in candidates:
            scored = [(text, float(next(similarities))) for text in points]
            kept = sorted((p for p in scored if p[1] >= self.min_similarity), key=lambda p: -p[1])
            mapped.append([Point(text, score) for text, score in kept[: self.max_points]])
        return mapped

    def _stored(self, report: Mapping[str, Any], points: list[str]) -> np.ndarray | None:
        if self.points is None or not points:
            return None
        return self.points.vectors(int(report["community"]), points)


def main_points(report: Mapping[str, Any], max_points: int = 3) -> list[Point]:
    """A report's most helpful points for a question about the whole collection, without a
    similarity threshold (a corpus-wide question resembles no single point): its summary, then its
    findings in the order the report gives them (most important first, as GraphRAG writes them).
    Scores are the report's rating (0-10, scaled to 0-1) over the point's position (1, 2, 3)."""
    rating = max(0.0, min(float(report.get("rank") or 0.0), 10.0)) / 10.0
    return [Point(text, rating / (1 + n)) for n, text in enumerate(report_points(report)[:max_points])]
