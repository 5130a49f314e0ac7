"""The rule-based router: each rule on a representative question, reasons, fallbacks, lazy spaCy."""

from __future__ import annotations

import pytest
from spacy.language import Language

from graphunified_query.router import FALLBACKS, RULES, Router
from graphunified_query.spacy_text import load_pipeline

ALL = ("naive", "hybrid", "graphrag_local", "graphrag_global", "lightrag", "hipporag")


@pytest.fixture(scope="module")
def router() -> Router:
    return Router()


@pytest.mark.parametrize(
    ("question", "rule", "strategy", "cue"),
    [
        ("What are the main themes of the corpus?", "summary", "graphrag_global", "main themes"),
        ("Summarize the documents.", "summary", "graphrag_global", "summarize"),
        ("What are the biggest risks discussed?", "open_list", "graphrag_global", "what are the"),
        (
            "What is the relationship between Thomas Hale and the River Harrow?",
            "two_entity_relation",
            "lightrag",
            '"Thomas Hale" and "River Harrow"',
        ),
        ("How is Eastfold related to Millbrook?", "two_entity_relation", "lightrag", "Eastfold"),
        (
            "Who was the founder of the mill on the river that flooded Eastfold?",
            "nested",
            "hipporag",
            "of the",
        ),
        ("What is Hale Mill's founder's birthplace?", "possessives", "hipporag", "2"),
        ("Did Thomas Hale and Ada Lovelace live in the same town?", "comparison", "hipporag", "same"),
        ("Which is older, the Hale Mill or the Harrow Valley Railway?", "comparison", "hipporag", "older"),
        ("How is the flood related to the mill?", "relation", "hipporag", "related to"),
        ("Did Thomas Hale ever meet Ada Lovelace?", "several_entities", "hipporag", "Ada Lovelace"),
        ("Who is Thomas Hale?", "one_entity", "graphrag_local", "Thomas Hale"),
        ("Tell me about the Hale Mill.", "one_entity", "graphrag_local", "Hale Mill"),
        ("When was Thomas Hale born?", "factual", "hybrid", ""),
        ("What did the mill weave?", "factual", "hybrid", ""),
    ],
)
def test_each_rule_fires_on_a_representative_question(
    router: Router, question: str, rule: str, strategy: str, cue: str
) -> None:
    decision = router.route(question, ALL)
    assert (decision.features["rule"], decision.strategy) == (rule, strategy), decision.reason
    assert cue in decision.reason and decision.reason.startswith("The question ")
    assert decision.features["preferred"] == strategy


def test_rules_and_fallbacks_name_known_strategies() -> None:
    assert {r.strategy for r in RULES} <= set(ALL) and set(FALLBACKS) == set(ALL)
    assert all(chain[-1] == "naive" for s, chain in FALLBACKS.items() if s != "naive")


def test_features_describe_the_entities(router: Router) -> None:
    features = router.route("Did Thomas Hale and Ada Lovelace live in the same town in 1862?", ALL).features
    assert features["entities"] == ["Thomas Hale", "Ada Lovelace"]  # the year is not a bridge
    assert features["entity_count"] == 2 and features["entity_types"] == ["PERSON"]


@pytest.mark.parametrize(
    ("available", "expected"),
    [
        (("naive", "hybrid", "hipporag", "lightrag"), "lightrag"),
        (("naive", "hybrid", "graphrag_local"), "hybrid"),
        (("naive",), "naive"),
    ],
)
def test_unavailable_strategy_falls_back_in_order(
    router: Router, available: tuple[str, ...], expected: str
) -> None:
    decision = router.route("What are the main themes of the corpus?", available)
    assert decision.strategy == expected and decision.features["preferred"] == "graphrag_global"
    if expected != "graphrag_global":
        assert f"graphrag_global is not available, so {expected} answers" in decision.reason


def test_no_servable_strategy_is_an_error(router: Router) -> None:
    with pytest.raises(ValueError, match="No strategy to route to"):
        router.route("Who is Thomas Hale?", ())


def test_spacy_loads_lazily_and_once() -> None:
    loads: list[Language] = []

    def load() -> Language:
        loads.append(load_pipeline())
        return loads[-1]

    router = Router(load_nlp=load)
    assert loads == []
    router.route("Who is Thomas Hale?", ALL)
    router.route("Summarize the documents.", ALL)
    assert len(loads) == 1


@pytest.mark.parametrize(
    ("question", "cue"),
    [
        ("Where was the director of film The Time Of The Hunt born?", "the director of film T"),
        (
            "What is the population of the state where Dodge City Regional Airport is located?",
            "the state where",
        ),
        ("When was Laura Marx's husband born?", "Marx's husband"),
    ],
)
def test_a_relation_chain_is_a_bridge_question(router: Router, question: str, cue: str) -> None:
    decision = router.route(question, ALL)
    assert decision.strategy == "hipporag" and decision.features["rule"] == "relation_chain"
    assert cue in decision.reason


def test_a_plain_lookup_is_not_a_relation_chain(router: Router) -> None:
    assert router.route("Who founded the Hale Mill?", ALL).features["rule"] != "relation_chain"


@pytest.mark.parametrize(
    ("question", "quoted"),
    [
        ("Who founded the Hale Mill, and what happened to it in the flood of 1894?", '"the flood of 1894"'),
        ("Who is the director of film Jump for Glory?", '"the director of film Jump for Glory"'),
        ("What is the population of the state where Millbrook lies?", '"the population of the state where"'),
    ],
)
def test_the_reason_quotes_whole_words_and_names(router: Router, question: str, quoted: str) -> None:
    assert quoted in router.route(question, ALL).reason
