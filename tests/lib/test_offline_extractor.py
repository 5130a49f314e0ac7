"""The spaCy extractor on hand-checked sentences: typed entities, co-occurrence edges, SVO facts."""

from __future__ import annotations

import pytest
from spacy.language import Language

from graphunified_assets.lib.extraction.offline_extractor import OfflineExtractor
from graphunified_assets.lib.extraction.records import ChunkExtraction, ChunkText, Extractor
from graphunified_query.core.settings.model import ExtractionSettings
from graphunified_query.core.text.spacy_text import clean_name, load_pipeline

CURIE = "Marie Curie was born in Warsaw. She worked at the University of Paris with Pierre Curie."
MILL = "The mill was founded by Thomas Hale in 1862."
APPLE = "Steve Jobs and Steve Wozniak founded Apple in Cupertino in 1976."
ALL_TYPES = ExtractionSettings().entity_types


@pytest.fixture(scope="module")
def nlp() -> Language:
    return load_pipeline()


def _extract(nlp: Language, text: str, entity_types: tuple[str, ...] = ALL_TYPES) -> ChunkExtraction:
    extractor = OfflineExtractor(entity_types=entity_types, nlp=nlp)
    (result,) = extractor.extract([ChunkText(chunk_id="c1", text=text)])
    return result


def _entities(result: ChunkExtraction) -> set[tuple[str, str]]:
    return {(e.name, e.type) for e in result.entities}


def _facts(result: ChunkExtraction) -> set[tuple[str, str, str]]:
    return {(f.subject, f.predicate, f.object) for f in result.facts}


def _edges(result: ChunkExtraction) -> dict[frozenset[str], str]:
    return {frozenset((r.source, r.target)): r.type for r in result.relationships}


def test_satisfies_the_extractor_protocol(nlp: Language) -> None:
    extractor: Extractor = OfflineExtractor(entity_types=ALL_TYPES, nlp=nlp)
    assert extractor.name == "offline-spacy"
    results = extractor.extract([ChunkText("a", CURIE), ChunkText("b", MILL), ChunkText("c", "")])
    assert [r.chunk_id for r in results] == ["a", "b", "c"]
    assert results[2].entities == () and results[2].facts == ()


def test_entities_are_typed_and_cleaned(nlp: Language) -> None:
    result = _extract(nlp, CURIE)
    assert _entities(result) >= {
        ("Marie Curie", "PERSON"),
        ("Warsaw", "LOCATION"),
        ("University of Paris", "ORGANIZATION"),  # leading "the" stripped
        ("Pierre Curie", "PERSON"),
    }
    warsaw = next(e for e in result.entities if e.name == "Warsaw")
    assert warsaw.description == "Marie Curie was born in Warsaw."


def test_description_gathers_every_sentence_mentioning_the_entity(nlp: Language) -> None:
    result = _extract(nlp, CURIE)
    marie = next(e for e in result.entities if e.name == "Marie Curie")
    # "She" in the second sentence is resolved to the previous sentence's subject.
    assert marie.description == CURIE


def test_possessive_is_stripped(nlp: Language) -> None:
    result = _extract(nlp, "Barack Obama's wife Michelle visited the Eiffel Tower.")
    assert ("Barack Obama", "PERSON") in _entities(result)
    assert ("Eiffel Tower", "LOCATION") in _entities(result)


def test_cooccurrence_and_verb_typed_relationships(nlp: Language) -> None:
    edges = _edges(_extract(nlp, CURIE))
    assert edges[frozenset(("Marie Curie", "Warsaw"))] == "BORN"
    assert edges[frozenset(("Marie Curie", "University of Paris"))] == "WORKED"
    # Two complements of one verb merely co-occur.
    assert edges[frozenset(("University of Paris", "Pierre Curie"))] == "RELATED_TO"
    assert frozenset(("Warsaw", "Pierre Curie")) not in edges  # different sentences


def test_relationship_direction_strength_and_description(nlp: Language) -> None:
    result = _extract(nlp, f"{APPLE} Steve Jobs later left Apple.")
    jobs_apple = next(r for r in result.relationships if {r.source, r.target} == {"Steve Jobs", "Apple"})
    assert (jobs_apple.source, jobs_apple.target, jobs_apple.type) == ("Steve Jobs", "Apple", "FOUNDED")
    assert jobs_apple.strength == 2.0  # two sentences
    assert jobs_apple.description.startswith(APPLE)
    assert all(not (r.source == "1976" and r.target == "1976") for r in result.relationships)


def test_no_date_date_pairs_and_vague_dates_dropped(nlp: Language) -> None:
    text = (
        "The treaty was signed in 1919, five years after the war began in 1914. Today the band won 20 awards."
    )
    result = _extract(nlp, text)
    dates = {e.name for e in result.entities if e.type == "DATE"}
    assert dates == {"1919", "1914"}  # not "five years", "Today" or the CARDINAL "20"
    assert all({r.source, r.target} != {"1919", "1914"} for r in result.relationships)


def test_active_prepositional_facts(nlp: Language) -> None:
    assert _facts(_extract(nlp, CURIE)) >= {
        ("Marie Curie", "was born in", "Warsaw"),
        ("Marie Curie", "worked at", "University of Paris"),
        ("Marie Curie", "worked with", "Pierre Curie"),
    }


def test_passive_fact_with_agent(nlp: Language) -> None:
    facts = _facts(_extract(nlp, MILL))
    assert ("mill", "was founded by", "Thomas Hale") in facts
    assert ("mill", "was founded in", "1862") in facts


def test_conjoined_subjects_and_copula_facts(nlp: Language) -> None:
    facts = _facts(_extract(nlp, f"{APPLE} Paris is the capital of France."))
    assert {("Steve Jobs", "founded", "Apple"), ("Steve Wozniak", "founded", "Apple")} <= facts
    assert ("Paris", "is capital of", "France") in facts


def test_facts_without_a_named_side_are_dropped(nlp: Language) -> None:
    assert _facts(_extract(nlp, "The dog chased a cat in the garden.")) == set()


def test_short_form_within_a_passage_becomes_the_full_name(nlp: Language) -> None:
    result = _extract(nlp, "Calvin Harris is a Scottish DJ. Harris released an album in 2012.")
    names = {e.name for e in result.entities}
    assert "Calvin Harris" in names and "Harris" not in names


def test_entity_types_filter(nlp: Language) -> None:
    result = _extract(nlp, f"{CURIE} {MILL}", entity_types=("PERSON", "LOCATION"))
    assert {t for _, t in _entities(result)} == {"PERSON", "LOCATION"}
    assert ("1862", "DATE") not in _entities(result)
    names = {e.name for e in result.entities}
    assert all(r.source in names and r.target in names for r in result.relationships)


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        ("the University of Paris", "University of Paris"),
        ("Obama's", "Obama"),
        ('"Hamlet",', "Hamlet"),
        ("U.S.", "U.S."),
        ("Apple Inc.", "Apple Inc."),
        ("Paris.", "Paris"),
    ],
)
def test_clean_name(raw: str, clean: str) -> None:
    assert clean_name(raw) == clean


def test_the_passage_title_is_an_entity_related_to_what_its_opening_names(nlp: Language) -> None:
    extractor = OfflineExtractor(entity_types=ALL_TYPES, nlp=nlp)
    text = (
        "Jump for Glory\n\nJump for Glory is a 1937 British drama film directed by Raoul Walsh. "
        "It was made at Isleworth Studios. Years later the studio closed."
    )
    (result,) = extractor.extract([ChunkText("c1", text, title="Jump for Glory")])
    assert ("Jump for Glory", "CONCEPT") in _entities(result)  # spaCy tags no entity for it
    title = next(e for e in result.entities if e.name == "Jump for Glory")
    assert title.description.startswith("Jump for Glory is a 1937 British drama film")
    edges = _edges(result)
    assert frozenset(("Jump for Glory", "Raoul Walsh")) in edges
    assert frozenset(("Jump for Glory", "Isleworth Studios")) in edges  # second sentence of the opening
    # A title spaCy does type keeps that type, and without a title nothing is added.
    (typed,) = extractor.extract(
        [ChunkText("c2", "Raoul Walsh\n\nRaoul Walsh was a director.", title="Raoul Walsh")]
    )
    assert ("Raoul Walsh", "PERSON") in _entities(typed) and len(typed.entities) == 1
    (untitled,) = extractor.extract([ChunkText("c3", text)])
    assert "Jump for Glory" not in {e.name for e in untitled.entities}


def test_the_extractor_with_two_parsing_processes_extracts_what_one_does(nlp: Language) -> None:
    chunks = [ChunkText(f"c{i}", text) for i, text in enumerate([CURIE, MILL, APPLE] * 24)]
    one = OfflineExtractor(entity_types=ALL_TYPES, nlp=nlp).extract(chunks)
    two = OfflineExtractor(entity_types=ALL_TYPES, nlp=nlp, processes=2).extract(chunks)
    assert two == one and _entities(two[2]) >= {("Steve Jobs", "PERSON"), ("Apple", "ORGANIZATION")}
