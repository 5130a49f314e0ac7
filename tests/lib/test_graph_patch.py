"""An update patches the last build's graph tables: exactly the tables a build from nothing makes.

Random corpora with the names resolution finds hard (variants, case and punctuation, cross-typed
names, names of punctuation alone, short PERSON forms) go through random updates: documents
added, removed and rewritten. After each one the patched entities, relationships and facts must
equal a fresh build's, cell for cell (`indexed_at` aside: a patch keeps the time of rows it did
not change).
"""

from __future__ import annotations

import pickle
import random
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from graphunified_assets.lib.extraction.extraction_rows import ExtractionRows
from graphunified_assets.lib.graph.graph_elements import GraphElements, GraphPatch, build_graph_elements
from graphunified_assets.lib.graph.graph_state import STATE_VERSION, GraphState, file_identity, load_state
from graphunified_assets.lib.graph.kept_rows import StaleGraphState
from graphunified_assets.lib.graph.resolution_pairs import PairMemory
from graphunified_query.core.tables import EXTRACTIONS_SCHEMA

PEOPLE = ["Thomas Hale", "Hale", "T. Hale", "thomas hale", "Ada Whitlock", "Whitlock", "Ada  Whitlock",
          "Jordan", "Marie Curie", "Curie", "Pierre Curie"]  # fmt: skip
PLACES = ["Millbrook", "Jordan", "Hale Mill", "HALE MILL", "Harrow Railway", "Leeds", "Millbrook Town",
          "The Millbrook", "—", "Leeds!"]  # fmt: skip
WORDS = ["wool", "rail", "stars", "mills", "trade", "rivers"]


def _document(rng: random.Random, document: str, version: int) -> list[dict[str, Any]]:
    rows = []
    for c in range(rng.randint(1, 3)):
        # Mostly names few chunks share, so an update leaves most rows as they were; some of the
        # hard ones, shared widely.
        names = [*rng.sample(PEOPLE, rng.randint(0, 1)), *rng.sample(PLACES, rng.randint(0, 1))]
        names += [f"Resident{rng.randrange(60)} Quill", f"Town{rng.randrange(60)}"]
        entities = [
            {
                "name": n,
                "type": rng.choice(["PERSON", "PERSON", "ORGANIZATION"])
                if "Town" not in n and n not in PLACES
                else "LOCATION",
                "description": rng.choice(
                    ["", f"{n} is known for {rng.choice(WORDS)}. It has {rng.choice(WORDS)}."]
                ),
            }
            for n in names
        ]
        relationships = [
            {
                "source": rng.choice(names),
                "target": rng.choice([*names, "Nobody Known", "hale mill"]),
                "type": rng.choice(["FOUNDED", "RELATED_TO", "LOCATED_IN"]),
                "description": rng.choice(["", f"Linked by {rng.choice(WORDS)} in {rng.randint(1, 4)}."]),
                "strength": float(rng.randint(1, 3)),
                "keywords": rng.choice([None, [], [rng.choice(WORDS)]]),
            }
            for _ in range(rng.randint(0, 4))
        ]
        facts = [
            {
                "subject": rng.choice(names),
                "predicate": rng.choice(["founded", "visited"]),
                "object": rng.choice(names),
            }
            for _ in range(rng.randint(0, 2))
        ]
        rows.append(
            {
                "chunk_id": f"{document}-v{version}-c{c}",
                "document_id": document,
                "extractor": "synthetic",
                "entities": entities,
                "relationships": relationships,
                "facts": facts,
                "dropped_records": 0,
            }
        )
    return rows


def _phrases(texts: list[str]) -> list[list[str]]:
    return [[" ".join(t.lower().split()[i : i + 2]) for i in range(0, 6, 2)] for t in texts]


def _embed(texts: list[str]) -> np.ndarray:
    vectors = np.array([np.random.default_rng(sum(map(ord, t))).normal(size=16) for t in texts])
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


class _Corpus:
    """Documents at versions; the rows of the live ones in document order, as the step reads them."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.versions: dict[str, int] = {}
        self.rows: dict[tuple[str, int], list[dict[str, Any]]] = {}

    def put(self, document: str) -> None:
        version = self.versions.get(document, 0) + 1
        self.versions[document] = version
        self.rows[(document, version)] = _document(self.rng, document, version)

    def table(self) -> pa.Table:
        rows = [row for doc in sorted(self.versions) for row in self.rows[(doc, self.versions[doc])]]
        return pa.Table.from_pylist(rows, schema=EXTRACTIONS_SCHEMA)

    def stamps(self) -> dict[str, list[int]]:
        return {doc: [version, 0] for doc, version in self.versions.items()}


def _build(rows: ExtractionRows, **kwargs: Any) -> GraphElements:
    return build_graph_elements(rows, summarize_above=2, embed=_embed, phrases=_phrases, **kwargs)


def _cells(table: pa.Table) -> list[dict[str, Any]]:
    return table.drop_columns(["indexed_at"]).to_pylist()


def _update(state: GraphState, last: GraphElements, corpus: _Corpus, memory: PairMemory) -> GraphElements:
    gone, new = state.changed_documents(corpus.stamps())
    rows = ExtractionRows(corpus.table(), batch_rows=3)
    chunks = rows.chunks_by_document()
    patch = GraphPatch(
        last.entities,
        last.relationships,
        last.facts,
        gone=gone,
        added={c for d in new for c in chunks.get(d, [])},
    )
    patched = _build(rows, state=state, patch=patch, memory=memory)
    state.record_documents(corpus.stamps(), chunks)
    return patched


@pytest.mark.parametrize("seed", range(12))
def test_random_updates_patch_to_the_tables_a_fresh_build_makes(seed: int) -> None:
    corpus = _Corpus(seed)
    for d in range(24):
        corpus.put(f"doc-{d:02d}")
    state, memory = GraphState(), PairMemory({"model": "test"})
    rows = ExtractionRows(corpus.table())
    last = _build(rows, state=state, memory=memory)
    state.record_documents(corpus.stamps(), rows.chunks_by_document())
    next_document = 24
    for _ in range(6):
        live = sorted(corpus.versions)
        for document in corpus.rng.sample(live, corpus.rng.randint(0, 2)):  # removed
            del corpus.versions[document]
        for document in corpus.rng.sample(sorted(corpus.versions), 1):  # rewritten
            corpus.put(document)
        for _ in range(corpus.rng.randint(0, 2)):  # added
            corpus.put(f"doc-{next_document:02d}")
            next_document += 1
        last = _update(state, last, corpus, memory)
        fresh = _build(ExtractionRows(corpus.table()))
        for name in ("entities", "relationships", "facts"):
            assert _cells(getattr(last, name)) == _cells(getattr(fresh, name)), name
        assert last.merges == fresh.merges


def _pair(document: str, person: str, place: str, predicate: str) -> dict[str, Any]:
    return {
        "chunk_id": f"{document}-c0",
        "document_id": document,
        "extractor": "synthetic",
        "entities": [
            {"name": person, "type": "PERSON", "description": f"{person} lived."},
            {"name": place, "type": "LOCATION", "description": f"{place} is a place."},
        ],
        "relationships": [
            {"source": person, "target": place, "type": "LIVED_IN", "description": "", "strength": 1.0}
        ],
        "facts": [{"subject": person, "predicate": predicate, "object": place}],
        "dropped_records": 0,
    }


def test_an_update_remakes_only_the_rows_it_affects() -> None:
    """A document naming one known person makes again that person's row and relationships, and
    its own rows; every other row is the last build's, its `indexed_at` too."""
    rows = [_pair(f"doc-{d:02d}", f"Person{d}", f"Place{d}", "lived in") for d in range(30)]
    state = GraphState()
    first = build_graph_elements(
        ExtractionRows(pa.Table.from_pylist(rows, EXTRACTIONS_SCHEMA)), summarize_above=2, state=state
    )
    source = ExtractionRows(pa.Table.from_pylist(rows, EXTRACTIONS_SCHEMA))
    state.record_documents({f"doc-{d:02d}": [1, 0] for d in range(30)}, source.chunks_by_document())
    written = pa.scalar(1, pa.timestamp("us", "UTC"))
    entities, relationships, facts = (
        t.set_column(t.schema.get_field_index("indexed_at"), "indexed_at", pa.array([written] * t.num_rows))
        for t in (first.entities, first.relationships, first.facts)
    )
    rows.append(_pair("doc-99", "Person3", "Harbour", "visited"))
    table = pa.Table.from_pylist(rows, EXTRACTIONS_SCHEMA)
    patch = GraphPatch(entities, relationships, facts, added={"doc-99-c0"})
    patched = build_graph_elements(ExtractionRows(table), summarize_above=2, state=state, patch=patch)
    fresh = build_graph_elements(ExtractionRows(table), summarize_above=2)

    def made(table: pa.Table, column: str) -> list[Any]:
        return sorted(table.filter(table.column("indexed_at").is_null()).column(column).to_pylist())

    assert made(patched.entities, "title") == ["Harbour", "Person3"]
    relationships = patched.relationships.filter(patched.relationships.column("indexed_at").is_null())
    ends = zip(
        relationships.column("source").to_pylist(), relationships.column("target").to_pylist(), strict=True
    )
    assert sorted(sorted(pair) for pair in ends) == [["Harbour", "Person3"], ["Person3", "Place3"]]
    assert made(patched.facts, "text") == ["Person3 visited Harbour"]
    assert patched.entities.num_rows == 61 and patched.relationships.num_rows == 31
    for name in ("entities", "relationships", "facts"):
        assert _cells(getattr(patched, name)) == _cells(getattr(fresh, name)), name


def test_a_state_that_does_not_match_its_tables_is_found_out() -> None:
    corpus = _Corpus(5)
    for d in range(8):
        corpus.put(f"doc-{d:02d}")
    state = GraphState()
    rows = ExtractionRows(corpus.table())
    first = _build(rows, state=state)
    state.record_documents(corpus.stamps(), rows.chunks_by_document())
    corpus.put("doc-99")
    truncated = GraphElements(first.entities.slice(1), first.relationships, first.facts, first.merges)
    with pytest.raises(StaleGraphState, match="entities"):
        _update(state, truncated, corpus, PairMemory({"model": "test"}))


def test_a_saved_state_loads_only_for_its_settings_and_tables(tmp_path: Path) -> None:
    corpus = _Corpus(9)
    for d in range(6):
        corpus.put(f"doc-{d:02d}")
    state = GraphState(settings={"summarize_above": 2})
    rows = ExtractionRows(corpus.table())
    _build(rows, state=state)
    table = tmp_path / "entities.parquet"
    table.write_bytes(b"x")
    state.tables = {"entities": file_identity(table)}
    path = tmp_path / "graph_state.pickle"
    state.save(path)
    same = load_state(path, {"summarize_above": 2}, {"entities": file_identity(table)})
    assert state.packed is not None and not state.groups  # packed by the build, until saved
    state.unpack()
    assert same.groups == state.groups and same.triples == state.triples and not same.is_empty
    assert load_state(path, {"summarize_above": 3}, {"entities": file_identity(table)}).is_empty
    table.write_bytes(b"xy")  # the table was rewritten by something else
    assert load_state(path, {"summarize_above": 2}, {"entities": file_identity(table)}).is_empty
    path.write_bytes(pickle.dumps("torn")[:3])
    assert load_state(path, {"summarize_above": 2}, {"entities": file_identity(table)}).is_empty


def test_a_build_from_nothing_needs_an_empty_state() -> None:
    corpus = _Corpus(1)
    corpus.put("doc-00")
    state = GraphState()
    _build(ExtractionRows(corpus.table()), state=state)
    with pytest.raises(ValueError, match="empty state"):
        _build(ExtractionRows(corpus.table()), state=state)


def test_an_update_of_a_graph_without_entities_gives_empty_tables() -> None:
    rows = [{**_pair(f"doc-{d}", "A", "B", "met"), "entities": [], "relationships": []} for d in range(3)]
    state = GraphState()
    table = pa.Table.from_pylist(rows, EXTRACTIONS_SCHEMA)
    first = build_graph_elements(ExtractionRows(table), summarize_above=2, state=state)
    state.record_documents({f"doc-{d}": [1, 0] for d in range(3)}, ExtractionRows(table).chunks_by_document())
    rows.append({**rows[0], "chunk_id": "doc-9-c0", "document_id": "doc-9"})
    patch = GraphPatch(first.entities, first.relationships, first.facts, added={"doc-9-c0"})
    table = pa.Table.from_pylist(rows, EXTRACTIONS_SCHEMA)
    patched = build_graph_elements(ExtractionRows(table), summarize_above=2, state=state, patch=patch)
    assert patched.entities.num_rows == patched.relationships.num_rows == 0
    assert patched.facts.column("chunk_ids").to_pylist() == [["doc-0-c0", "doc-1-c0", "doc-2-c0", "doc-9-c0"]]


def test_a_state_saved_by_other_code_is_ignored(tmp_path: Path) -> None:
    """A state file of another version (its layout differs) is read as no state at all."""
    state = GraphState()
    _build(
        ExtractionRows(pa.Table.from_pylist([_pair("d", "A B", "C", "met")], EXTRACTIONS_SCHEMA)), state=state
    )
    path = tmp_path / "graph_state.pickle"
    state.save(path)
    assert not load_state(path, {}, {}).is_empty
    with path.open("wb") as handle:
        pickle.dump((STATE_VERSION - 1, state), handle)
    assert load_state(path, {}, {}).is_empty
