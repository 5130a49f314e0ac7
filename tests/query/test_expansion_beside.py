"""Link expansion never displaces a strategy's own ``top_k`` contexts (issue #30 item 1), on the
sample corpus: the neighbours come back beside them and follow them into the prompt."""

from __future__ import annotations

from pathlib import Path

import pytest

from graphunified_query.engine.query_engine import QueryEngine
from graphunified_query.generation.packing import context_budget

# A sample question whose second supporting passage (people/arthur-penrose.md) is naive's
# second hit; with link expansion competing for the places, a neighbour of the first took it.
MEDAL = "The medal James Okafor received is named after a man who became professor at which university?"


@pytest.fixture(scope="module")
def sample(sample_home: Path) -> QueryEngine:
    return QueryEngine.open(sample_home, environ={})


def test_naive_top_3_keeps_the_answer_passage(sample: QueryEngine) -> None:
    response = sample.ask(MEDAL, "naive", 3, retrieve_only=True)
    assert "people/arthur-penrose.md" in [c.document_id for c in response.contexts]
    assert response.expanded_contexts  # the neighbours are still there, beside
    assert all("expanded_from" in c.metadata for c in response.expanded_contexts)


@pytest.mark.parametrize(
    "strategy", ["naive", "hybrid", "graphrag_local", "graphrag_global", "lightrag", "hipporag"]
)
def test_a_strategys_own_contexts_are_the_same_with_expansion_on(sample: QueryEngine, strategy: str) -> None:
    for question in (MEDAL, "What connects Thomas Hale and Ada Whitlock?"):
        on = sample.ask(question, strategy, 5, retrieve_only=True, link_expansion=True)
        off = sample.ask(question, strategy, 5, retrieve_only=True, link_expansion=False)
        assert [(c.chunk_id, c.text) for c in on.contexts] == [(c.chunk_id, c.text) for c in off.contexts]
        assert not any("expanded_from" in c.metadata for c in on.contexts)  # 100 % the strategy's own
        assert not off.expanded_contexts
        pipeline = on.metadata["context_pipeline"]
        assert pipeline["expanded_packed"] == len(on.expanded_contexts) <= pipeline["expanded"]
        assert pipeline["packed"] == len(on.contexts) + len(on.expanded_contexts)


def test_lightrag_returns_its_graph_contexts(sample: QueryEngine) -> None:
    # Seed 003's multi-hop example, routed to lightrag: its relationships, not only chunks (it got
    # 10 chunks, 0 relationships, while link neighbours took the places). The entity share is
    # `entity_weight`'s, issue #30 item 2.
    response = sample.ask("What connects Thomas Hale and Ada Whitlock?", "lightrag", 10, retrieve_only=True)
    kinds = [c.kind for c in response.contexts]
    assert "relationship" in kinds, kinds


def test_the_answer_is_given_the_own_contexts_first_then_their_neighbours(sample: QueryEngine) -> None:
    response = sample.ask(MEDAL, "naive", 3)
    sent = response.metadata["contexts_sent"]
    assert sent == len(response.contexts) + len(response.expanded_contexts)
    cli = response.as_dict()
    assert len(cli["contexts"]) == 3 and len(cli["expanded_contexts"]) == len(response.expanded_contexts)


def test_a_per_call_context_window_is_the_generators_budget(sample: QueryEngine) -> None:
    # Every chunk of the sample, which overflows the settings' budget but not the call's.
    response = sample.ask(MEDAL, "naive", 60, context_window=64_000, link_expansion=False)
    pipeline = response.metadata["context_pipeline"]
    assert pipeline["token_estimate"] > context_budget(sample.settings.query)  # more than settings fit
    assert response.metadata["contexts_sent"] == pipeline["packed"] == len(response.contexts)


def test_the_cli_lists_the_expanded_sources_apart_with_the_one_that_pulled_each(sample: QueryEngine) -> None:
    from graphunified_query.cli import _human

    response = sample.ask(MEDAL, "naive", 3, retrieve_only=True)
    own, _, linked = _human(response).partition("Linked from those (link expansion):")
    assert own.count("\n[") == 3 and linked.count("\n[") == len(response.expanded_contexts)
    assert "[4] " in linked and " of [" in linked
