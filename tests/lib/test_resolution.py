"""Entity resolution merges variants of one name within a type and nothing else."""

from __future__ import annotations

import random

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from graphunified_assets.lib.graph.name_matching import normalize_name
from graphunified_assets.lib.graph.resolution import (
    EntityMention,
    ResolvedEntity,
    resolve_entities,
    summarize_descriptions,
)

M = EntityMention


def _by_title(entities: tuple[ResolvedEntity, ...]) -> dict[tuple[str, str], ResolvedEntity]:
    return {(e.title, e.type): e for e in entities}


def test_normalize_name() -> None:
    assert normalize_name("The U.S.'s") == "us"
    assert normalize_name("  Besançon  Hugues ") == "besancon hugues"
    assert normalize_name("coming-of-age") == "coming of age"
    assert normalize_name("ＡＢＣ") == "abc"  # NFKC folds full-width letters


def test_obama_variants_merge_with_merged_from() -> None:
    mentions = [
        M("Barack Obama", "PERSON", "Barack Obama was the 44th president.", "c1"),
        M("Obama", "PERSON", "Obama was born in Honolulu.", "c2"),
        M("barack obama", "PERSON", "", "c3"),
        M("Obama", "PERSON", "Obama was born in Honolulu.", "c2"),
    ]
    resolution = resolve_entities(mentions)
    (obama,) = resolution.entities
    assert obama.title == "Barack Obama"
    assert obama.merged_from == ("Obama", "barack obama")
    assert obama.text_unit_ids == ("c1", "c2", "c3")
    assert obama.frequency == 3  # distinct chunks, not mentions
    assert obama.descriptions == ("Barack Obama was the 44th president.", "Obama was born in Honolulu.")
    assert {resolution.entity_ids[(n, "PERSON")] for n in ("Barack Obama", "Obama", "barack obama")} == {
        obama.id
    }
    assert resolution.id_for("BARACK OBAMA", "person") == obama.id
    assert resolution.merges == {"normalized": 1, "fuzzy": 0, "alias": 1, "type_vote": 0}


def test_homonyms_of_different_types_stay_apart() -> None:
    resolution = resolve_entities(
        [M("Jordan", "PERSON", chunk_id="c1"), M("Jordan", "LOCATION", chunk_id="c2")]
    )
    assert {(e.title, e.type) for e in resolution.entities} == {("Jordan", "PERSON"), ("Jordan", "LOCATION")}
    assert resolution.id_for("Jordan", "PERSON") != resolution.id_for("Jordan", "LOCATION")


def test_type_vote_joins_one_name_typed_two_ways() -> None:
    mentions = [M("Hale Mill", "ORGANIZATION", chunk_id=f"c{i}") for i in range(3)]
    mentions += [M("Hale Mill", "PERSON", chunk_id="c9")]  # a multi-word name: one thing
    mentions += [M("Millbrook", "LOCATION", chunk_id=f"m{i}") for i in range(3)] + [M("Millbrook", "CONCEPT")]
    resolution = resolve_entities(mentions)
    assert {(e.title, e.type) for e in resolution.entities} == {
        ("Hale Mill", "ORGANIZATION"),
        ("Millbrook", "LOCATION"),
    }
    mill = resolution.id_for("Hale Mill", "ORGANIZATION")
    assert resolution.id_for("Hale Mill", "PERSON") == mill
    assert next(e for e in resolution.entities if e.id == mill).frequency == 4
    assert resolution.merges["type_vote"] == 2


def test_ambiguous_surname_is_not_merged() -> None:
    resolution = resolve_entities(
        [
            M("John Smith", "PERSON", chunk_id="c1"),
            M("Jane Smith", "PERSON", chunk_id="c2"),
            M("Smith", "PERSON"),
        ]
    )
    assert sorted(e.title for e in resolution.entities) == ["Jane Smith", "John Smith", "Smith"]
    assert all(e.merged_from == () for e in resolution.entities)


def test_surname_joins_a_person_whose_variants_were_merged_first() -> None:
    resolution = resolve_entities(
        [M("Barack Obama", "PERSON"), M("Barack Hussein Obama", "PERSON"), M("Obama", "PERSON")]
    )
    # One person; with equal counts the longest full form is the title.
    assert [e.title for e in resolution.entities] == ["Barack Hussein Obama"]
    assert resolution.entities[0].merged_from == ("Barack Obama", "Obama")


def test_middle_name_alias_only_when_unique() -> None:
    names = ["John Kennedy", "John F. Kennedy", "George Bush", "George W. Bush", "George H. W. Bush"]
    entities = resolve_entities([M(n, "PERSON") for n in names]).entities
    assert sorted(e.title for e in entities) == [
        "George Bush",
        "George H. W. Bush",
        "George W. Bush",
        "John F. Kennedy",
    ]


def test_first_name_alias_needs_a_shared_passage() -> None:
    together = resolve_entities(
        [M("Marie Curie", "PERSON", chunk_id="c1"), M("Marie", "PERSON", chunk_id="c1")]
    )
    apart = resolve_entities([M("Marie Curie", "PERSON", chunk_id="c1"), M("Marie", "PERSON", chunk_id="c2")])
    assert len(together.entities) == 1 and len(apart.entities) == 2


def test_fuzzy_merges_typos_but_not_numbered_names() -> None:
    names = ["Tchaikovsky Museum", "Tchaikowsky Museum", "1990 FIFA World Cup", "1994 FIFA World Cup"]
    entities = resolve_entities([M(n, "ORGANIZATION") for n in names]).entities
    assert len(entities) == 3
    regnal = resolve_entities([M("Henry VII", "PERSON"), M("Henry VIII", "PERSON")]).entities
    assert len(regnal) == 2
    centuries = resolve_entities([M("15th century", "DATE"), M("5th century", "DATE")]).entities
    assert len(centuries) == 2


def test_regnal_name_is_not_a_short_form() -> None:
    entities = resolve_entities([M("Napoleon III", "PERSON"), M("Louis Napoleon", "PERSON")]).entities
    assert len(entities) == 2


def test_ids_are_stable_and_independent_of_input_order() -> None:
    mentions = [
        M("Barack Obama", "PERSON", "a", "c1"),
        M("Obama", "PERSON", "b", "c2"),
        M("Warsaw", "LOCATION", "c", "c3"),
        M("University of Paris", "ORGANIZATION", "d", "c1"),
        M("the University of Paris", "ORGANIZATION", "e", "c4"),
    ]
    first = resolve_entities(mentions)
    shuffled = mentions[:]
    random.Random(7).shuffle(shuffled)
    second = resolve_entities(shuffled)
    assert first.entities == second.entities
    assert dict(first.entity_ids) == dict(second.entity_ids)
    warsaw = _by_title(first.entities)[("Warsaw", "LOCATION")]
    assert warsaw.id == resolve_entities([M("Warsaw", "LOCATION")]).entities[0].id


_NAMES = ["Barack Obama", "Obama", "barack obama", "Marie Curie", "Marie", "Warsaw", "Jordan", "Henry VII"]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(_NAMES),
            st.sampled_from(["PERSON", "LOCATION"]),
            st.sampled_from(["", "one.", "two."]),
            st.sampled_from(["c1", "c2", "c3"]),
        ),
        max_size=12,
    ),
    st.data(),
)
def test_entities_made_on_demand_are_the_whole_sets(
    mentions: list[tuple[str, str, str, str]], data: st.DataObject
) -> None:
    """An update reads only the entities it affected (`entities_of`) and every title (`titles`):
    each must be what the whole set says."""
    resolution = resolve_entities([M(*m) for m in mentions])
    every = resolution.entities
    assert len(resolution) == len(every) == len({e.id for e in every})
    assert resolution.titles == {e.id: e.title for e in every}
    assert set(resolution.groups.values()) == {e.id for e in every}
    wanted = data.draw(st.sets(st.sampled_from([e.id for e in every] + ["ent-unknown"])))
    assert resolution.entities_of(wanted) == tuple(e for e in every if e.id in wanted)


def test_embedding_neighbours_merge_within_type_only() -> None:
    vectors = {"USA": [1.0, 0.0], "United States": [0.99, 0.141], "Paris": [0.0, 1.0], "Nvidia": [1.0, 0.0]}

    def embed(texts: list[str]) -> np.ndarray:
        return np.array([vectors[t] for t in texts])

    mentions = [
        M("USA", "LOCATION"),
        M("United States", "LOCATION"),
        M("Paris", "LOCATION"),
        M("Nvidia", "PRODUCT"),
    ]
    resolution = resolve_entities(mentions, embed=embed, embed_threshold=0.95)
    titles = {(e.title, e.type): e.merged_from for e in resolution.entities}
    assert titles == {
        ("United States", "LOCATION"): ("USA",),
        ("Paris", "LOCATION"): (),
        ("Nvidia", "PRODUCT"): (),
    }


def test_summarize_picks_central_fragments_in_order() -> None:
    fragments = [
        "Paris is the capital of France.",
        "A cat sat on a mat near the river.",
        "Paris is the largest city of France and its capital.",
        "The city of Paris lies on the Seine in northern France.",
        "Tickets cost ten euros.",
    ]
    summary = summarize_descriptions(fragments, max_sentences=2)
    assert summary == "Paris is the capital of France. Paris is the largest city of France and its capital."


def test_summarize_with_embeddings_and_short_input() -> None:
    vectors = {"Ab.": [1.0, 0.0], "Bc.": [0.9, 0.436], "Cd.": [0.0, 1.0], "De.": [0.95, 0.312]}

    def embed(texts: list[str]) -> np.ndarray:
        return np.array([vectors[t] for t in texts])

    # Centroid ≈ (0.85, 0.52): "Bc." and "De." are closest; fragments are split into sentences.
    assert summarize_descriptions(["Ab. Bc.", "Cd.", "De."], max_sentences=2, embed=embed) == "Bc. De."
    assert summarize_descriptions(["Only one.", "Only one."]) == "Only one."
    assert summarize_descriptions([]) == ""


# How else a name may be written: case, stray and doubled spaces, a leading article.
_RESPELLINGS = [
    str.upper,
    str.lower,
    lambda n: f" {n} ",
    lambda n: n.replace(" ", "  "),
    lambda n: f"The {n}",
]


@settings(max_examples=80, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from([*_NAMES, "The  Hale Mill", "hale mill's", "...", "Besançon", "besancon"]),
            st.sampled_from(["PERSON", "LOCATION"]),
        ),
        min_size=1,
        max_size=10,
    ),
    st.data(),
)
def test_a_name_finds_the_entity_of_any_spelling_of_its_group(
    mentions: list[tuple[str, str]], data: st.DataObject
) -> None:
    """`id_for` answers as the normalized spellings of every surface name would: the entity of
    the one whose normalized name and type are the asked name's; none for a name of punctuation."""
    resolution = resolve_entities([M(n, t, chunk_id="c1") for n, t in mentions])
    spelled = {
        (normalize_name(surface), t): entity
        for (surface, t), entity in resolution.entity_ids.items()
        if normalize_name(surface)
    }
    mentioned, type_ = data.draw(st.sampled_from(mentions))
    name = data.draw(st.sampled_from([f(mentioned) for f in _RESPELLINGS] + ["--", "Nobody"]))
    asked_type = data.draw(st.sampled_from([type_, type_.lower(), "ORGANIZATION"]))
    exact = resolution.entity_ids.get((name.strip(), asked_type.upper()))
    expected = exact if exact is not None else spelled.get((normalize_name(name), asked_type.upper()))
    assert resolution.id_for(name, asked_type) == expected
