"""The graph stage streams extraction rows from Arrow and still builds the same tables.

The golden digests below were computed with the pre-streaming code (rows as one Python list,
`with_keywords` copying them, three passes) on the synthetic corpus made here: the streamed build
must produce the same entities, relationships and facts, cell for cell.
"""

from __future__ import annotations

import hashlib
import json
import random
import tempfile
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import given, settings
from hypothesis import strategies as st

from graphunified_assets.lib.copy_rows import CopyRows
from graphunified_assets.lib.extraction.extraction_rows import ExtractionRows
from graphunified_assets.lib.graph.graph_elements import build_graph_elements
from graphunified_assets.lib.graph.relationship_keywords import texts_to_parse, with_keywords
from graphunified_query.core.tables import EXTRACTIONS_SCHEMA

PEOPLE = ["Thomas Hale", "Hale", "T. Hale", "Ada Whitlock", "Whitlock", "Ada  Whitlock", "Jordan"]
PLACES = ["Millbrook", "Jordan", "Hale Mill", "Harrow Railway", "Leeds", "Millbrook Town"]
GOLDEN = {
    "entities": "3cd58562c806839a9653f93e3798ee5401103d17248c5969d87050f7dbe516d7",
    "relationships": "3c0f943a17e2d5794eaedd5d3e5c565c6ea690b7a2f3f65863dde3dda5b95040",
    # Fact ids hash the triple since 4a8c9af (two triples could read alike and share an id).
    "facts": "ab926159e425862afd350220cd3646c24b3787b6ef20eab8b1481b762e8b3996",
}


def synthetic_extractions(chunks: int = 240, seed: int = 7) -> pa.Table:
    """A corpus with repeated, variant and cross-typed names, edges with and without keywords."""
    rng = random.Random(seed)
    rows: list[dict[str, Any]] = []
    for c in range(chunks):
        names = rng.sample(PEOPLE, 2) + rng.sample(PLACES, 2)
        entities = [
            {
                "name": n,
                "type": rng.choice(["PERSON", "PERSON", "ORGANIZATION"]) if n in PEOPLE else "LOCATION",
                "description": f"{n} appears in passage {c % 17}. "
                f"It is notable for {rng.choice(['wool', 'rail', 'stars'])}.",
            }
            for n in names
        ]
        relationships = [
            {
                "source": rng.choice(names),
                "target": rng.choice([*names, "Nobody Known"]),
                "type": rng.choice(["FOUNDED", "RELATED_TO", "LOCATED_IN"]),
                "description": rng.choice(
                    ["", f"Linked through the {rng.choice(['mill', 'line'])} trade in {c % 5}."]
                ),
                "strength": float(rng.randint(1, 3)),
                "keywords": rng.choice([None, [], ["textile trade", "wool"]]),
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
                "chunk_id": f"chunk-{c:04d}",
                "document_id": f"doc-{c // 3:03d}",
                "extractor": "synthetic",
                "entities": entities,
                "relationships": relationships,
                "facts": facts,
                "dropped_records": 0,
            }
        )
    return pa.Table.from_pylist(rows, schema=EXTRACTIONS_SCHEMA)


def phrases(texts: list[str]) -> list[list[str]]:
    return [[" ".join(t.lower().split()[i : i + 2]) for i in range(0, 6, 2)] for t in texts]


def embed(texts: list[str]) -> np.ndarray:
    vectors = np.array([np.random.default_rng(sum(map(ord, t))).normal(size=16) for t in texts])
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def digest(table: pa.Table) -> str:
    """The table's cells, but `indexed_at` (added after the digests; the asset stamps it on write)."""
    if "indexed_at" in table.column_names:
        assert table.column("indexed_at").null_count == table.num_rows
        table = table.drop_columns(["indexed_at"])
    return hashlib.sha256(json.dumps(table.to_pylist(), sort_keys=True).encode()).hexdigest()


def build_digests(rows: Any) -> dict[str, str]:
    elements = build_graph_elements(rows, summarize_above=2, embed=embed, phrases=phrases)
    return {name: digest(getattr(elements, name)) for name in GOLDEN}


def test_streamed_rows_build_the_same_tables_as_the_old_list_build() -> None:
    table = synthetic_extractions()
    assert build_digests(ExtractionRows(table, batch_rows=7)) == GOLDEN
    assert build_digests(table.to_pylist()) == GOLDEN  # a plain list still works


def test_extraction_rows_decode_only_the_graph_columns_and_can_be_read_again() -> None:
    table = synthetic_extractions(chunks=10)
    rows = ExtractionRows(table, batch_rows=3)
    expected = table.select(["chunk_id", "entities", "relationships", "facts"]).to_pylist()
    assert len(rows) == 10 and list(rows) == expected and list(rows) == expected


def test_extraction_rows_read_from_a_parquet_file_are_the_tables_rows(tmp_path: Path) -> None:
    table = synthetic_extractions(chunks=10)
    path = tmp_path / "extractions.parquet"
    pq.write_table(table, path)
    rows = ExtractionRows(CopyRows(path), batch_rows=3)
    expected = table.select(["chunk_id", "entities", "relationships", "facts"]).to_pylist()
    assert len(rows) == 10 and list(rows) == expected and list(rows) == expected
    assert build_digests(ExtractionRows(CopyRows(path), batch_rows=7)) == build_digests(ExtractionRows(table))
    pq.write_table(synthetic_extractions(chunks=3), path.with_suffix(".new"))
    path.with_suffix(".new").replace(path)  # replaced after it was opened: the same rows still
    assert list(rows) == expected


@settings(max_examples=40, deadline=None)
@given(picked=st.sets(st.integers(0, 39)), group_rows=st.sampled_from([1, 3, 16, 100]))
def test_the_rows_of_some_chunks_from_a_file_are_the_tables_in_its_order(
    picked: set[int], group_rows: int
) -> None:
    table = synthetic_extractions(chunks=40)
    chunks = [table.column("chunk_id")[i].as_py() for i in sorted(picked)] + ["no-such-chunk"]
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "extractions.parquet"
        pq.write_table(table, path, row_group_size=group_rows)  # only the groups holding them are read
        from_file = list(ExtractionRows(CopyRows(path)).rows_of(chunks))
    assert from_file == list(ExtractionRows(table).rows_of(chunks))
    assert [row["chunk_id"] for row in from_file] == chunks[:-1]


@settings(max_examples=40, deadline=None)
@given(
    kept=st.lists(st.integers(0, 29), unique=True),
    fresh=st.integers(0, 6),
    shuffle=st.randoms(use_true_random=False),
    picked=st.sets(st.integers(0, 35)),
    group_rows=st.sampled_from([1, 4, 100]),
)
def test_rows_of_a_copy_and_the_files_changed_since_are_the_assembled_tables(
    kept: list[int], fresh: int, shuffle: random.Random, picked: set[int], group_rows: int
) -> None:
    """`CopyRows` (a copy's rows, some gone, and fresh rows, in an order of their own) read as the
    table they make: every pass, the rows of some chunks, each document's chunks, the texts."""
    table = synthetic_extractions(chunks=36)
    copy, added = table.slice(0, 30), table.slice(30, fresh)
    order = [*kept, *range(30, 30 + fresh)]  # the copy's rows still live, then the fresh ones
    shuffle.shuffle(order)
    expected = ExtractionRows(pa.concat_tables([copy, added]).take(pa.array(order, pa.int64())))
    chunks = [table.column("chunk_id")[i].as_py() for i in sorted(picked)]
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "copy.parquet"
        pq.write_table(copy, path, row_group_size=group_rows)
        rows = ExtractionRows(CopyRows(path, added, np.array(order, np.int64)), batch_rows=5)
        assert len(rows) == len(expected) and list(rows) == list(expected)
        assert list(rows.rows_of(chunks)) == list(expected.rows_of(chunks))
        assert rows.chunks_by_document() == expected.chunks_by_document()
        assert rows.relationship_texts() == expected.relationship_texts()
        unordered = ExtractionRows(CopyRows(path, added))  # the copy's rows, then the fresh ones
        assert list(unordered.rows_of(chunks)) == list(
            ExtractionRows(table.slice(0, 30 + fresh)).rows_of(chunks)
        )


class _Rel(dict):  # a dict that can be weakly referenced: is the source's row still alive?
    pass


class _Source:
    """Re-iterable rows whose relationships record how many of them are alive at once."""

    def __init__(self, chunks: int) -> None:
        self.chunks = chunks
        self.alive = 0
        self.most_alive = 0
        self.passes = 0

    def __iter__(self) -> Iterator[dict[str, Any]]:
        self.passes += 1
        for c in range(self.chunks):
            rels = [
                _Rel(source="A", target="B", type="RELATED_TO", description=f"A met B {c % 9}.", strength=1.0)
                for _ in range(3)
            ]
            rels[0]["keywords"] = ["meeting"]
            for rel in rels:
                self.alive += 1
                weakref.finalize(rel, self._freed)
            self.most_alive = max(self.most_alive, self.alive)
            entities = [{"name": n, "type": "PERSON", "description": f"{n} was there."} for n in "AB"]
            yield {"chunk_id": f"c{c}", "entities": entities, "relationships": rels, "facts": []}

    def _freed(self) -> None:
        self.alive -= 1


def test_build_reads_rows_twice_and_holds_only_the_current_ones() -> None:
    source = _Source(chunks=200)
    elements = build_graph_elements(source, summarize_above=2, phrases=phrases)
    (edge,) = elements.relationships.to_pylist()
    assert edge["weight"] == 600.0 and len(edge["text_unit_ids"]) == 200
    assert source.passes == 2  # mentions, facts and keyword texts; edges
    assert source.most_alive <= 6  # two rows' relationships, not the corpus's


def test_keywords_are_filled_row_by_row_as_the_rows_are_read() -> None:
    source = _Source(chunks=50)
    rows = iter(with_keywords(source, phrases))
    assert source.passes == 1  # descriptions gathered; no row filled ahead
    first = next(rows)
    assert source.passes == 2 and source.most_alive <= 6
    assert first["relationships"][0]["keywords"] == ["meeting"]
    assert first["relationships"][1]["keywords"] == ["met", "0."]  # "a met" without the name "A"


def test_the_live_relationship_texts_read_in_arrow_are_the_ones_the_rows_give() -> None:
    """What the graph stage keeps in the keyword cache (every live sentence without keywords)."""
    table = synthetic_extractions()
    texts = ExtractionRows(table).relationship_texts()
    assert sorted(texts) == sorted(texts_to_parse(table.to_pylist())) and len(texts) == 10
