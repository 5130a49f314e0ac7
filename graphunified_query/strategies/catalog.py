"""What each built-in strategy is, with nothing built: name, tier, summary, the router's fallbacks,
whether it deepens, its cost. The registry (`registry.py`) pairs each entry with its retriever and
parameter model; the CLI's parser reads this module alone (standard library only), so
`graphunified ask --help` lists the strategies without importing numpy, pyarrow or any retriever.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

AUTO = "auto"  # not a strategy: the router picks one per question
# core: the six compared side by side (`compare`, eval `all`, the router's targets);
# extra: chosen by name only; composable: building blocks, also combinable in settings.yaml.
Tier = Literal["core", "extra", "composable"]


@dataclass(frozen=True)
class Entry:
    tier: Tier
    summary: str
    # Where the router sends this strategy's questions when the index cannot serve it, best first.
    fallbacks: tuple[str, ...] = ("naive",)
    # Whether a deeper list may be asked for when filters leave fewer than top_k (`query_path`);
    # False where the candidates do not grow with top_k and asking again repeats LLM calls.
    deepens: bool = True
    # Relative cost of one query, cheapest 0: dense only < dense + BM25 < graph walks < LLM calls at
    # query time. Ties in the learned router's labels go to the cheaper strategy (`cost_order`).
    cost: int = 2


CATALOG: dict[str, Entry] = {
    "naive": Entry("core", "cosine over chunk vectors", (), cost=0),
    "hybrid": Entry("core", "dense + BM25, weighted RRF", cost=1),
    "graphrag_local": Entry(
        "core",
        "entity neighbourhoods (Microsoft GraphRAG local search)",
        ("lightrag", "hipporag", "hybrid", "naive"),
    ),
    "graphrag_global": Entry(
        "core",
        "community reports, map-reduce (GraphRAG global search)",
        ("lightrag", "hybrid", "naive"),
        deepens=False,
        cost=4,  # an LLM map over community reports per question
    ),
    "lightrag": Entry(
        "core",
        "entities and relationships, dual level (LightRAG)",
        ("hipporag", "graphrag_local", "hybrid", "naive"),
        cost=3,  # keyword extraction by the LLM when one is configured
    ),
    "hipporag": Entry(
        "core",
        "personalized PageRank over the entity graph (HippoRAG 2)",
        ("lightrag", "graphrag_local", "hybrid", "naive"),
    ),
    "expanded": Entry("extra", "vector seeds + graph expansion"),
    "vector": Entry("composable", "chunk vectors"),
    "vector_mmr": Entry("composable", "MMR"),
    "graph_bfs": Entry("composable", "BFS walk"),
    "graph_dfs": Entry("composable", "DFS walk"),
}
