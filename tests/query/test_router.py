"""The rule-based router: each rule on a representative question, reasons, fallbacks, and its question
entities read from the index's names without spaCy."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from graphunified_query.routing.rules import FALLBACKS, RULES, Router
from graphunified_query.strategies.entity_linking import NameIndex

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


# A tiny index: the graph's entity names and types, as a snapshot's `name_index` holds them.
INDEX = NameIndex.build(
    [
        {"title": "Thomas Hale", "type": "PERSON"},
        {"title": "Ada Lovelace", "type": "PERSON"},
        {"title": "Harrow Valley", "type": "LOCATION"},
        {"title": "1862", "type": "DATE"},
        {"title": "Jump for Glory", "type": "PRODUCT"},
    ]
)


def test_features_describe_the_entities_with_the_index_types() -> None:
    router = Router(names=lambda: INDEX)
    features = router.route("Did Thomas Hale and Ada Lovelace live in the same town in 1862?", ALL).features
    assert features["entities"] == ["Thomas Hale", "Ada Lovelace"]  # the year is not a bridge
    assert features["entity_count"] == 2 and features["entity_types"] == ["PERSON"]


def test_without_an_index_capitals_alone_find_the_names(router: Router) -> None:
    features = router.route("Did Thomas Hale and Ada Lovelace live in the same town in 1862?", ALL).features
    assert features["entities"] == ["Thomas Hale", "Ada Lovelace"]
    assert features["entity_types"] == ["UNKNOWN"]


@pytest.mark.parametrize(
    ("question", "entities"),
    [
        # The index supplies a name the first word opens, and the type of a longer capitalized run.
        ("Thomas Hale founded which mill?", [("Thomas Hale", "PERSON")]),
        ("Where does the Harrow Valley Railway end?", [("Harrow Valley Railway", "LOCATION")]),
        # Connectors inside a name, "and" between two; quotes keep a title whole; months are dates.
        ("Who directed Jump for Glory?", [("Jump for Glory", "PRODUCT")]),
        ('Who wrote "The Time of the Hunt" in March?', [("Time of the Hunt", "UNKNOWN")]),
        (
            "Was Saint-Denis built before Paris, France?",
            [(n, "UNKNOWN") for n in ("Saint-Denis", "Paris", "France")],
        ),
    ],
)
def test_question_entities_from_the_index_and_capitals(
    question: str, entities: list[tuple[str, str]]
) -> None:
    assert list(Router(names=lambda: INDEX).features(question).entities) == entities


@pytest.mark.parametrize(
    ("question", "count"),
    [
        ("What is Hale Mill's founder's birthplace?", 2),
        ("What's the name of the players' union?", 1),  # "what's" is "what is"
        ("Who is it?", 0),
    ],
)
def test_possessives_are_counted_without_a_parser(router: Router, question: str, count: int) -> None:
    assert router.features(question).possessives == count


def test_the_index_is_read_once_and_only_when_a_question_is_routed() -> None:
    built: list[NameIndex] = []
    router = Router(names=lambda: built.append(INDEX) or INDEX)
    assert built == []
    router.route("Who is Thomas Hale?", ALL)
    router.route("Summarize the documents.", ALL)
    assert len(built) == 1


def test_routing_imports_no_spacy() -> None:
    """The first routed question pays no language model: spaCy is never imported (a fresh process,
    since other tests in this one load it)."""
    script = textwrap.dedent(
        """
        import sys
        from graphunified_query.strategies.entity_linking import NameIndex
        from graphunified_query.routing.rules import Router
        index = NameIndex.build([{"title": "Thomas Hale", "type": "PERSON"}])
        decision = Router(names=lambda: index).route(
            "Did Thomas Hale and Ada Lovelace live in the same town?", ("naive", "hybrid", "hipporag")
        )
        assert decision.strategy == "hipporag", decision
        assert decision.features["entities"] == ["Thomas Hale", "Ada Lovelace"], decision.features
        print(sorted(m for m in sys.modules if m == "spacy" or m.startswith(("spacy.", "thinc"))))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        env=os.environ,
        check=True,
        timeout=120,
    )
    assert done.stdout.strip() == "[]", done.stdout + done.stderr


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
