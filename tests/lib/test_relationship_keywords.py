"""LightRAG's relationship keywords: offline key phrases of the sentence, cached, merged, embedded."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from graphunified_assets.lib.extraction.records import ExtractedRelationship
from graphunified_assets.lib.graph import relationship_keywords
from graphunified_assets.lib.graph.graph_elements import build_graph_elements
from graphunified_assets.lib.graph.relationship_keywords import Phrases, SpacyPhrases, with_keywords
from graphunified_assets.lib.vectors.relationship_vectors import relationship_text, relationship_vectors
from graphunified_query.core.providers.llm_cache import LLMCache
from graphunified_query.core.text import spacy_text
from tests.lib.counting_cache import CountingCache

SENTENCE = (
    "Thomas Hale founded the Hale Mill, a large woollen textile factory on the river, "
    "after an early apprenticeship in Leeds."
)


def _rel(source: str, target: str, description: str, **extra: Any) -> dict[str, Any]:
    rel = {"source": source, "target": target, "type": "FOUNDED", "description": description, "strength": 1.0}
    return rel | extra


def _row(chunk: str, *rels: dict[str, Any]) -> dict[str, Any]:
    names = {n for r in rels for n in (r["source"], r["target"])}
    return {
        "chunk_id": chunk,
        "document_id": f"doc-{chunk}",
        "entities": [{"name": n, "type": "ORGANIZATION", "description": n} for n in sorted(names)],
        "relationships": list(rels),
        "facts": [],
    }


def _counting(phrases: Phrases, calls: list[list[str]]) -> Phrases:
    def wrapped(texts: list[str]) -> list[list[str]]:
        calls.append(texts)
        return phrases(texts)

    return wrapped


def test_offline_keywords_are_the_sentence_themes_without_the_entity_names() -> None:
    rows = list(with_keywords([_row("c1", _rel("Thomas Hale", "Hale Mill", SENTENCE))], SpacyPhrases()))
    keywords = rows[0]["relationships"][0]["keywords"]
    assert keywords == ["large woollen textile factory", "river", "early apprenticeship"]
    words = {w for k in keywords for w in k.split()}
    assert not words & {"thomas", "hale", "mill", "leeds"}  # names are low-level, not themes


def test_extractor_keywords_are_kept_and_phrases_are_cached_by_content(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = LLMCache(tmp_path / "keywords.sqlite")
    calls: list[list[str]] = []
    given = _rel("Thomas Hale", "Hale Mill", SENTENCE, keywords=["industry founding"])
    rows = [_row("c1", given, _rel("Hale Mill", "River Harrow", SENTENCE))]
    first = list(with_keywords(rows, _counting(SpacyPhrases(cache), calls)))
    assert first[0]["relationships"][0]["keywords"] == ["industry founding"]  # the extractor's stay
    assert "river" not in first[0]["relationships"][1]["keywords"]  # this pair's own name words go
    assert calls == [[SENTENCE]] and len(cache) == 1  # one distinct sentence, parsed once

    def no_parsing(*_: object) -> None:
        raise AssertionError("a cached sentence was parsed again")

    monkeypatch.setattr(spacy_text, "load_pipeline", no_parsing)
    assert list(with_keywords(rows, SpacyPhrases(cache))) == first  # a later run reads the cache


def test_duplicates_across_documents_union_their_keywords_most_frequent_first() -> None:
    rows = [
        _row("c1", _rel("Hale Mill", "River Harrow", "x", keywords=["water power", "location"])),
        _row("c2", _rel("River Harrow", "Hale Mill", "y", keywords=["flood", "location"])),
        _row("c3", _rel("Hale Mill", "River Harrow", "z", keywords=["flood", "location", "damage"])),
    ]
    elements = build_graph_elements(rows, summarize_above=10)
    (edge,) = elements.relationships.to_pylist()
    assert edge["keywords"] == ["location", "flood", "water power", "damage"]
    assert elements.relationships.schema.field("keywords").type.value_type == "string"


def test_extracted_relationship_keywords_are_cleaned_and_bounded() -> None:
    rel = ExtractedRelationship(source="A", target="B", keywords="Flood,  damage , ,flood")  # type: ignore[arg-type]
    assert rel.keywords == ("flood", "damage")
    many = ExtractedRelationship(source="A", target="B", keywords=[f"k{i}" for i in range(20)])
    assert len(many.keywords) == 8
    assert ExtractedRelationship(source="A", target="B").keywords == ()


def test_the_relationship_vector_and_text_carry_the_keywords() -> None:
    def embed(texts: list[str]) -> np.ndarray:
        # a deterministic toy embedding: one dimension per distinct word
        vocabulary = ["flood", "mill", "river", "hale", "harrow", "stood", "on"]
        return np.array([[t.lower().count(w) for w in vocabulary] + [1.0] for t in texts], np.float32)

    row = {"source": "Hale Mill", "target": "River Harrow", "type": "ON", "description": "stood on"}
    plain = relationship_vectors([row], embed)[0]
    keyed_row = {**row, "keywords": ["flood", "damage"]}
    assert np.array_equal(relationship_vectors([keyed_row], embed)[0], plain)  # weight 0: the default
    keyed = relationship_vectors([keyed_row], embed, keyword_weight=0.25)[0]
    assert keyed[0] > 0 == plain[0]  # the keyword's direction is in the vector
    assert relationship_text(keyed_row, keywords=True).startswith("[flood, damage] Hale Mill")
    assert relationship_text(keyed_row) == "Hale Mill ON River Harrow: stood on"


def test_phrases_are_read_and_saved_in_batches_with_the_same_results(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(relationship_keywords, "SAVE_EVERY", 2)
    texts = [SENTENCE, "The old mill by the river closed.", "A quiet village grew.", SENTENCE[:40]]
    cache = CountingCache(tmp_path / "keywords.sqlite")
    cached = SpacyPhrases(cache)(texts)
    assert cached == SpacyPhrases()(texts)  # the cache changes nothing
    assert (cache.reads, cache.writes) == (1, [2, 2])  # one lookup, a transaction per 2 parsed
    cache.writes, cache.reads = [], 0
    assert SpacyPhrases(cache)([*texts[1:], "Another new sentence."]) == [*cached[1:], ["new sentence"]]
    assert (cache.reads, cache.writes) == (1, [1])  # only the new text parsed and saved


def test_llm_cache_batches_round_trip(tmp_path: Path) -> None:
    cache = LLMCache(tmp_path / "c.sqlite")
    cache.put_many({f"k{i}": {"n": i, "text": "é"} for i in range(1200)})  # more keys than one query holds
    found = cache.get_many([f"k{i}" for i in range(0, 1300, 3)])
    assert found == {f"k{i}": {"n": i, "text": "é"} for i in range(0, 1200, 3)}  # absent keys left out
    assert cache.get("k7") == {"n": 7, "text": "é"} and len(cache) == 1200


def test_keeping_only_the_live_sentences_drops_a_removed_documents_phrases(tmp_path: Path) -> None:
    cache = LLMCache(tmp_path / "keywords.sqlite")
    phrases = SpacyPhrases(cache)
    phrases([SENTENCE, "The removed document's only sentence."])
    # The next graph build: the other document was removed, and an update parses nothing.
    assert cache.keep_only(SpacyPhrases(cache).keys([SENTENCE])) == 1
    assert b"removed document" not in (tmp_path / "keywords.sqlite").read_bytes()
    assert len(cache.get_many(phrases.keys([SENTENCE]))) == 1  # the live one stays


def test_two_parsing_processes_give_each_sentence_the_phrases_one_does(tmp_path: Path) -> None:
    texts = [f"{SENTENCE[:-1]} in the year {1800 + i}." for i in range(140)]  # over a batch per worker
    spread = SpacyPhrases(LLMCache(tmp_path / "keywords.sqlite"), processes=2)
    assert spread(texts) == SpacyPhrases()(texts)
    assert spread.processes == 2
