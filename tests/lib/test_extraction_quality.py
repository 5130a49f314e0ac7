"""Extraction P/R/F1 on hand-checked cases: alias and article normalization, types, direction, optional."""

from __future__ import annotations

from pathlib import Path

import pytest

from graphunified_assets.lib.extraction.gold import DEFAULT_GOLD, GoldLabelError, load_gold
from graphunified_assets.lib.extraction.quality import (
    Counts,
    GoldDocument,
    GoldEntity,
    GoldRelationship,
    normalize_name,
    score_all,
    score_document,
)
from graphunified_assets.lib.extraction.records import ExtractedEntity, ExtractedRelationship

MILL = GoldDocument(
    "fleming.md",
    (
        GoldEntity("Alexander Fleming", ("PERSON",), aliases=("Fleming",)),
        GoldEntity("St Mary's Hospital", ("LOCATION", "ORGANIZATION")),
        GoldEntity("London", ("LOCATION",)),
        GoldEntity("Howard Florey", ("PERSON",)),
        GoldEntity("1941", ("DATE",), optional=True),
    ),
    (
        GoldRelationship("Alexander Fleming", "St Mary's Hospital"),
        GoldRelationship("St Mary's Hospital", "London"),
        GoldRelationship("Howard Florey", "Alexander Fleming", type="CITED", directed=True),
        GoldRelationship("Alexander Fleming", "London", optional=True),
    ),
)
RIVER = GoldDocument(
    "danube.md",
    (GoldEntity("Danube", ("LOCATION",)), GoldEntity("Vienna", ("LOCATION",))),
    (GoldRelationship("Danube", "Vienna"),),
)


def _e(name: str, type_: str) -> ExtractedEntity:
    return ExtractedEntity(name=name, type=type_)


def _r(source: str, target: str) -> ExtractedRelationship:
    return ExtractedRelationship(source=source, target=target)


MILL_ENTITIES = [
    _e("Fleming", "PERSON"),  # alias: TP
    _e("The St Mary’s Hospital", "LOCATION"),  # article + curly quote; an acceptable type: TP
    _e("London", "ORGANIZATION"),  # right name, wrong type: TP without types, FP + FN with
    _e("Penicillin", "PRODUCT"),  # not labelled: FP
    _e("1941", "DATE"),  # optional: ignored
    _e("Alexander Fleming", "PERSON"),  # the same entity again: counted once
    _e("Fleming", "ORGANIZATION"),  # a second type for a credited entity: FP with types
]
MILL_RELATIONSHIPS = [
    _r("St Mary's Hospital", "Fleming"),  # undirected label, reversed: TP
    _r("Alexander Fleming", "St Mary's Hospital"),  # the same edge through an alias: once
    _r("London", "St Mary's Hospital"),  # TP
    _r("Fleming", "Howard Florey"),  # directed label the wrong way round: FP
    _r("Fleming", "London"),  # optional label: ignored
    _r("Fleming", "1941"),  # touches an optional entity: ignored
    _r("Fleming", "Penicillin"),  # FP
    _r("Fleming", "Alexander Fleming"),  # a self-loop once aliases resolve: FP
]


def _counts(c: Counts) -> tuple[int, int, int]:
    return c.tp, c.fp, c.fn


def test_normalization_folds_case_articles_quotes_and_possessives() -> None:
    assert normalize_name("  The  Hanseatic League's ") == "hanseatic league"
    assert normalize_name("St Mary’s Hospital.") == "st mary's hospital"
    assert normalize_name("A Tale") == "tale"
    assert normalize_name("Lübeck") == "lübeck"


def test_hand_checked_document() -> None:
    score = score_document(MILL, MILL_ENTITIES, MILL_RELATIONSHIPS)
    assert _counts(score.entities) == (2, 3, 2)
    assert (score.entities.precision, score.entities.recall) == (0.4, 0.5)
    assert score.entities.f1 == pytest.approx(4 / 9)
    assert _counts(score.entities_any_type) == (3, 1, 1)
    assert score.entities_any_type.f1 == 0.75
    assert _counts(score.relationships) == (2, 3, 1)
    assert score.relationships.f1 == pytest.approx(0.5)  # P 0.4, R 2/3
    per_type = {t: _counts(c) for t, c in score.per_type.items()}
    assert per_type == {
        "PERSON": (1, 0, 1),  # Fleming found, Florey missed
        "LOCATION": (1, 0, 1),  # St Mary's found, London missed (typed ORGANIZATION)
        "ORGANIZATION": (0, 2, 0),
        "PRODUCT": (0, 1, 0),
    }


def test_micro_average_sums_counts_over_documents() -> None:
    predictions = {
        "fleming.md": (MILL_ENTITIES, MILL_RELATIONSHIPS),
        "danube.md": ([_e("Danube", "LOCATION")], [_r("Vienna", "Danube")]),
    }
    report = score_all([MILL, RIVER], predictions, extractor="test")
    assert _counts(report.entities) == (3, 3, 3)
    assert report.entities.f1 == 0.5
    assert _counts(report.relationships) == (3, 3, 1)
    assert report.relationships.f1 == pytest.approx(0.6)  # P 0.5, R 0.75
    assert report.as_dict()["per_document"]["danube.md"] == {"entities_f1": 0.6667, "relationships_f1": 1.0}
    assert "entities (type-aware)" in report.table()
    empty = score_all([RIVER], {}, extractor="none")  # no prediction: zero, never a division error
    assert (_counts(empty.entities), empty.entities.f1) == ((0, 0, 2), 0.0)


def test_the_fixture_loads_with_consistent_labels() -> None:
    gold = load_gold(DEFAULT_GOLD)
    assert len(gold) == 8
    assert sum(1 for d in gold for e in d.entities if not e.optional) == 91
    for document in gold:  # aliases never name two entities (the resolver would refuse)
        score_document(document, [], [])


def test_label_mistakes_name_the_document_and_field(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("# A\n\nText.\n")
    labels = tmp_path / "labels.yaml"
    labels.write_text(
        "a.md:\n  entities: [{name: X, type: PERSON}]\n  relationships: [{source: X, target: Y}]\n"
    )
    with pytest.raises(GoldLabelError, match=r"a.md > relationships\[0\]: target 'Y' is not a labelled"):
        load_gold(tmp_path)
    labels.write_text("b.md:\n  entities: []\n")
    with pytest.raises(GoldLabelError, match=r"b\.md: no such document"):
        load_gold(tmp_path)
    labels.write_text("a.md:\n  entities: [{name: X}]\n")
    with pytest.raises(GoldLabelError, match=r"entities\[0\]: needs name, type"):
        load_gold(tmp_path)
    clash = GoldDocument(
        "c.md", (GoldEntity("Hale", ("PERSON",)), GoldEntity("Hale Mill", ("ORG",), aliases=("Hale",)))
    )
    with pytest.raises(ValueError, match="'Hale' names both"):
        score_document(clash, [], [])


def test_recorded_claude_responses_through_the_real_extractor(tmp_path: Path) -> None:
    from graphunified_assets.lib.extraction.evaluate import evaluate_extractor
    from graphunified_assets.lib.extraction.llm_extractor import LLMExtractor
    from graphunified_assets.lib.extraction.replay import recorded_responder
    from graphunified_query.core.providers.claude import ClaudeClient
    from graphunified_query.core.providers.llm_cache import LLMCache
    from graphunified_query.core.settings.model import LLMSettings, Settings
    from tests.fakes.anthropic_server import FakeAnthropicServer

    with FakeAnthropicServer(recorded_responder()) as server:
        llm = LLMSettings(base_url=server.base_url, requests_per_minute=100_000)
        client = ClaudeClient(
            llm, Settings().prices, api_key="test-key", cache=LLMCache(tmp_path / "c.sqlite")
        )
        report = evaluate_extractor(LLMExtractor(client, entity_types=Settings().extraction.entity_types))
    # 8 documents, one call each: no recorded reply was cut off at max_tokens, so none is gleaned.
    # Gleaning every chunk (16 calls) found (90, 4, 1) and (81, 4, 6): relationship F1 0.942, not 0.914.
    assert len(server.requests) == 8
    assert _counts(report.entities) == (88, 1, 3)  # recorded mistakes: wrong type, generic concepts
    assert _counts(report.relationships) == (74, 1, 13)
    assert report.entities.f1 > 0.95 and report.relationships.f1 > 0.9
