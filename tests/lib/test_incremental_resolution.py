"""Incremental entity resolution: remembered candidate pairs give exactly a full resolution's result,
and an update compares only the names it adds (a removal compares nothing)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from graphunified_assets.lib.graph.resolution import EntityMention, Resolution, resolve_entities
from graphunified_assets.lib.graph.resolution_pairs import PairMemory
from graphunified_query.core.providers.local_embedder import LocalMiniLMEmbedder

# Variants that merge by each rule (fuzzy typo, embedding neighbour, alias, type vote), and bystanders.
DOCUMENT_A = [
    ("Thomas Hale", "PERSON"),
    ("Hale", "PERSON"),
    ("Hale Mill", "ORGANIZATION"),
    ("Hale Mill", "PERSON"),
    ("River Harrow", "LOCATION"),
    ("Harrow Valley Railway", "ORGANIZATION"),
    ("Eastfold", "LOCATION"),
    ("Millbrook", "LOCATION"),
    ("Great Flood of 1894", "EVENT"),
    ("Kestrel Lantern Society", "ORGANIZATION"),
    ("Mary Shelley", "PERSON"),
    ("Lord Byron", "PERSON"),
    ("Bristol", "LOCATION"),
    ("Penrith", "LOCATION"),
]
DOCUMENT_B = [
    ("Thomas J. Hale", "PERSON"),
    ("River Harow", "LOCATION"),
    ("Harrow Valley Railways", "ORGANIZATION"),
    ("Eastfold Town", "LOCATION"),
    ("Great Flood of 1895", "EVENT"),
    ("The Great Flood of 1894", "EVENT"),
    ("Kestrel Lantern Society of Harrowgate", "ORGANIZATION"),
    ("Ada Whitlock", "PERSON"),
    ("Whitlock", "PERSON"),
]
DOCUMENT_C = [("Arthur Penrose", "PERSON"), ("Harrowgate", "LOCATION")]


def _mentions(document: str, names: list[tuple[str, str]]) -> list[EntityMention]:
    return [
        EntityMention(name, type_, f"{name} appears in {document}.", f"{document}-chunk-{n % 2}")
        for n, (name, type_) in enumerate(names)
    ]


class _Embed:
    """The real local model; counts the texts it is asked for."""

    def __init__(self) -> None:
        self.model = LocalMiniLMEmbedder()
        self.texts = 0

    def __call__(self, texts: list[str]) -> np.ndarray:
        self.texts += len(texts)
        return self.model.embed(texts)


def _same(a: Resolution, b: Resolution) -> None:
    assert a.entities == b.entities
    assert dict(a.entity_ids) == dict(b.entity_ids)
    assert dict(a.merges) == dict(b.merges)


def test_an_update_resolves_only_new_names_and_equals_a_full_resolution(tmp_path: Path) -> None:
    embed = _Embed()
    a, b, c = _mentions("a", DOCUMENT_A), _mentions("b", DOCUMENT_B), _mentions("c", DOCUMENT_C)
    full = resolve_entities(a + b + c, embed=embed)
    assert full.merges["fuzzy"] and full.merges["alias"] and full.merges["type_vote"]  # rules exercised

    memory = PairMemory(settings={"model": "minilm"})
    first = resolve_entities(a + b, embed=embed, memory=memory)
    _same(first, resolve_entities(a + b, embed=embed))
    path = tmp_path / "pairs.pickle"
    memory.save(path)
    memory = PairMemory.load(path, {"model": "minilm"})
    embed.texts = 0
    updated = resolve_entities(a + b + c, embed=embed, memory=memory)
    _same(updated, full)
    # The saved vectors of the names it had: only the two new names were embedded.
    assert embed.texts == 2
    # Only the two new names were compared: one row of neighbours each, no old name re-compared
    # (a type with at most neighbours + 1 names is recomputed whole: its neighbour count changes).
    assert memory.work["embedding_rows"] == 2
    assert memory.work["fuzzy_comparisons"] <= 2 * len(DOCUMENT_A + DOCUMENT_B + DOCUMENT_C)


def test_removing_a_document_drops_its_names_without_resolving_the_rest(tmp_path: Path) -> None:
    embed = _Embed()
    a, b, c = _mentions("a", DOCUMENT_A), _mentions("b", DOCUMENT_B), _mentions("c", DOCUMENT_C)
    memory = PairMemory(settings={"model": "minilm"})
    resolve_entities(a + b + c, embed=embed, memory=memory)
    memory.work = dict.fromkeys(memory.work, 0)
    embed.texts = 0
    after = resolve_entities(a + b, embed=embed, memory=memory)
    _same(after, resolve_entities(a + b, embed=_Embed()))
    assert memory.work == {"fuzzy_comparisons": 0, "embedding_rows": 0}
    assert embed.texts == 0  # not even the remaining names' vectors were needed
    # Removing the variants B added undoes their merges, still without a fuzzy comparison (types left
    # with at most neighbours + 1 names recompute their few neighbour rows).
    after = resolve_entities(a, embed=embed, memory=memory)
    _same(after, resolve_entities(a, embed=_Embed()))
    assert memory.work["fuzzy_comparisons"] == 0


def test_a_torn_vectors_file_costs_only_embedding_again(tmp_path: Path) -> None:
    """The name vectors beside the pairs are a cache: torn, they are not read, the names are
    embedded again, and the result is a full resolution's."""
    embed = _Embed()
    a, b = _mentions("a", DOCUMENT_A), _mentions("b", DOCUMENT_B)
    path = tmp_path / "pairs.pickle"
    memory = PairMemory(settings={"model": "minilm"})
    resolve_entities(a, embed=embed, memory=memory)
    memory.save(path)
    vectors = tmp_path / "pairs.vectors" / "index.npz"
    assert PairMemory.load(path, {"model": "minilm"}).vectors
    vectors.write_bytes(vectors.read_bytes()[:100])
    loaded = PairMemory.load(path, {"model": "minilm"})
    assert loaded.vectors == {}
    embed.texts = 0
    _same(resolve_entities(a + b, embed=embed, memory=loaded), resolve_entities(a + b, embed=_Embed()))
    assert embed.texts > len(DOCUMENT_B)  # the old names' vectors came from the embedder again


def test_a_memory_made_with_another_model_or_threshold_is_not_used(tmp_path: Path) -> None:
    embed = _Embed()
    mentions = _mentions("a", DOCUMENT_A) + _mentions("b", DOCUMENT_B)
    memory = PairMemory(settings={"model": "minilm"})
    resolve_entities(mentions, embed=embed, memory=memory)
    path = tmp_path / "pairs.pickle"
    memory.save(path)
    other = PairMemory.load(path, {"model": "voyage-3.5"})
    assert not other.types
    same = PairMemory.load(path, {"model": "minilm"})
    looser = resolve_entities(mentions, embed=embed, memory=same, fuzzy_threshold=80.0)
    _same(looser, resolve_entities(mentions, embed=embed, fuzzy_threshold=80.0))
    assert same.work["fuzzy_comparisons"] > 0  # recomputed under the new threshold
    path.write_bytes(b"damaged")
    assert not PairMemory.load(path, {"model": "minilm"}).types


def test_the_memory_round_trips_and_one_saved_as_gzipped_json_before_is_not_read(tmp_path: Path) -> None:
    """Version 2 pickles the pairs (gzipped JSON took 1.1 s of every 12.6K update). A version-1
    file is not read, so the first update after the upgrade compares every name once, with the
    name vectors kept beside it: reading 78K of them back from the embedding cache took minutes."""
    import gzip
    import json

    mentions = _mentions("a", DOCUMENT_A) + _mentions("b", DOCUMENT_B)
    memory = PairMemory(settings={"model": "minilm"})
    resolve_entities(mentions, embed=_Embed(), memory=memory)
    path = tmp_path / "pairs.pickle"
    memory.save(path)
    loaded = PairMemory.load(path, {"model": "minilm"})
    assert loaded.types == memory.types and loaded.types["PERSON"].close
    path.write_bytes(
        gzip.compress(json.dumps({"version": 1, "settings": {"model": "minilm"}, "types": {}}).encode())
    )
    upgraded = PairMemory.load(path, {"model": "minilm"})
    assert not upgraded.types and upgraded.vectors
    embed = _Embed()
    _same(
        resolve_entities(mentions, embed=embed, memory=upgraded), resolve_entities(mentions, embed=_Embed())
    )
    assert embed.texts == 0 and upgraded.work["embedding_rows"] > 0


def test_spilled_vectors_are_written_let_go_and_read_back(tmp_path: Path) -> None:
    """The graph stage lets the name vectors go once resolution is done (`spill`); the file keeps
    them for the next update, and saving the pairs afterwards leaves it as it is."""
    embed = _Embed()
    a, b = _mentions("a", DOCUMENT_A), _mentions("b", DOCUMENT_B)
    path = tmp_path / "pairs.pickle"
    memory = PairMemory.load(path, {"model": "minilm"})  # none yet: where it will be saved
    resolve_entities(a, embed=embed, memory=memory)
    memory.spill()
    assert not memory.vectors and (tmp_path / "pairs.vectors" / "index.npz").exists()
    memory.save(path)
    loaded = PairMemory.load(path, {"model": "minilm"})
    assert sum(len(v.texts) for v in loaded.vectors.values()) > 10
    embed.texts = 0
    _same(resolve_entities(a + b, embed=embed, memory=loaded), resolve_entities(a + b, embed=_Embed()))
    assert embed.texts == len(DOCUMENT_B)  # only the new names
