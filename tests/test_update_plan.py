"""Which documents a run must touch: the heart of hash-based incrementality."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa

from graphunified_assets.lib.ingest.index_state import IndexState
from graphunified_assets.lib.ingest.update_plan import (
    UpdatePlan,
    capped_ranges,
    contiguous_ranges,
    plan_update,
)
from graphunified_query.core.layout import HomeLayout
from graphunified_query.core.stores.parquet import write_table_atomic

TABLES = ("text_units", "chunk_embeddings")
CHUNKING = "key-now"
MODEL = "model-now"


def _write(layout: HomeLayout, table: str, document_id: str, mtime: int) -> None:
    path = layout.partition_path(table, document_id)
    write_table_atomic(path, pa.table({"document_id": [document_id]}))
    os.utime(path, ns=(mtime, mtime))


def _unchanged(layout: HomeLayout, documents: tuple[str, ...], model: str | None = MODEL) -> UpdatePlan:
    """The plan for ``documents`` indexed and live, none of them edited."""
    hashes = dict.fromkeys(documents, "h")
    return plan_update(
        hashes, hashes, list(hashes), layout=layout, downstream_tables=TABLES, chunking=CHUNKING, model=model
    )


def _indexed(layout: HomeLayout, document_id: str) -> None:
    _write(layout, "documents", document_id, 1_000)
    for table in TABLES:
        _write(layout, table, document_id, 2_000)


def test_new_changed_removed_and_unchanged(tmp_path: Path) -> None:
    layout = HomeLayout.at(tmp_path)
    for doc in ("a.md", "b.md", "gone.md"):
        _indexed(layout, doc)
    plan = plan_update(
        {"a.md": "h1", "b.md": "h2-edited", "c.md": "h3"},
        {"a.md": "h1", "b.md": "h2", "gone.md": "h9"},
        ["a.md", "b.md", "gone.md"],
        layout=layout,
        downstream_tables=TABLES,
        chunking=CHUNKING,
        model=MODEL,
    )
    assert plan.new == ("c.md",)
    assert plan.changed == ("b.md",)
    assert plan.removed == ("gone.md",)
    assert plan.incomplete == ()
    assert plan.unchanged == 1
    assert set(plan.pending) == {"b.md", "c.md"}


def test_half_finished_document_is_incomplete(tmp_path: Path) -> None:
    layout = HomeLayout.at(tmp_path)
    _indexed(layout, "a.md")
    _indexed(layout, "b.md")
    # b's embeddings predate its latest documents file: the run died between the two stages.
    _write(layout, "chunk_embeddings", "b.md", 500)
    plan = plan_update(
        {"a.md": "h", "b.md": "h"},
        {"a.md": "h", "b.md": "h"},
        ["a.md", "b.md"],
        layout=layout,
        downstream_tables=TABLES,
        chunking=CHUNKING,
        model=MODEL,
    )
    assert plan.incomplete == ("b.md",)
    assert plan.unchanged == 1


def test_a_document_missing_a_file_is_incomplete(tmp_path: Path) -> None:
    layout = HomeLayout.at(tmp_path)
    for document in ("a.md", "no-vectors.md", "no-documents-file.md"):
        _indexed(layout, document)
    layout.partition_path("chunk_embeddings", "no-vectors.md").unlink()
    layout.partition_path("documents", "no-documents-file.md").unlink()
    plan = _unchanged(layout, ("a.md", "no-vectors.md", "no-documents-file.md"))
    assert plan.incomplete == ("no-documents-file.md", "no-vectors.md")
    assert plan.unchanged == 1


def test_failed_partition_is_retried(tmp_path: Path) -> None:
    layout = HomeLayout.at(tmp_path)
    # A live partition whose document never got indexed (it failed) counts as changed.
    plan = plan_update(
        {"bad.pdf": "h"},
        {},
        ["bad.pdf"],
        layout=layout,
        downstream_tables=TABLES,
        chunking=CHUNKING,
        model=MODEL,
    )
    assert plan.changed == ("bad.pdf",)
    assert plan.new == ()


def test_a_document_chunked_with_other_chunking_settings_is_re_chunked(tmp_path: Path) -> None:
    layout = HomeLayout.at(tmp_path)
    for doc in ("a.md", "b.md", "c.md"):
        _indexed(layout, doc)
    state = IndexState(layout.index_state)
    state.mark_chunked(["a.md"], "key-before")  # chunking.size changed since a.md was chunked
    state.mark_chunked(["b.md"], CHUNKING)  # c.md: chunked before the key was kept, taken as now
    plan = _unchanged(layout, ("a.md", "b.md", "c.md"))
    assert plan.rechunk == ("a.md",) and plan.pending == ("a.md",) and plan.unchanged == 2
    assert "1 to re-chunk (chunking settings changed)" in plan.summary()
    state.forget(["a.md"])  # a removed document's record goes with it
    assert "a.md" not in state.chunked_with()


def test_a_document_embedded_with_another_model_is_re_embedded(tmp_path: Path) -> None:
    """A changed `embedding.models` (or a new default variant) left every chunk vector the old
    model's, even with `index --refresh`: the model each document was embedded with is now part of
    the staleness key."""
    layout = HomeLayout.at(tmp_path)
    for doc in ("a.md", "b.md", "c.md", "d.md"):
        _indexed(layout, doc)
    state = IndexState(layout.index_state)
    state.mark_embedded(["a.md"], "model-before")
    state.mark_embedded(["b.md"], MODEL)
    # Embedded before the record was kept: judged by the model its vectors file names.
    for doc, model in (("c.md", "model-before"), ("d.md", MODEL)):
        write_table_atomic(
            layout.partition_path("chunk_embeddings", doc), pa.table({"document_id": [doc], "model": [model]})
        )
        os.utime(layout.partition_path("chunk_embeddings", doc), ns=(2_000, 2_000))

    def plan(model: str | None) -> UpdatePlan:
        return _unchanged(layout, ("a.md", "b.md", "c.md", "d.md"), model)

    assert plan(MODEL).reembed == ("a.md", "c.md") and plan(MODEL).pending == ("a.md", "c.md")
    assert plan(MODEL).unchanged == 2
    assert "2 to re-embed (embedding model changed)" in plan(MODEL).summary()
    assert plan(None).reembed == ()  # a model not known here (a provider without its key)
    # The files were read once: what they name is recorded for the next plans.
    assert state.embedded_with() == {
        "a.md": "model-before",
        "b.md": MODEL,
        "c.md": "model-before",
        "d.md": MODEL,
    }
    state.forget(["a.md"])  # a removed document's record goes with it
    assert "a.md" not in state.embedded_with()


def test_contiguous_ranges_merge_closest_gaps() -> None:
    keys = [f"k{i}" for i in range(10)]
    assert contiguous_ranges(keys, {"k1", "k2", "k3"}, max_ranges=4) == [("k1", "k3")]
    assert contiguous_ranges(keys, {"k0", "k2", "k8"}, max_ranges=4) == [
        ("k0", "k0"),
        ("k2", "k2"),
        ("k8", "k8"),
    ]
    # Limited to two runs: the closest pair (k0, k2) merges, k8 stays alone.
    assert contiguous_ranges(keys, {"k0", "k2", "k8"}, max_ranges=2) == [("k0", "k2"), ("k8", "k8")]
    assert contiguous_ranges(keys, {"k0", "k2", "k8"}, max_ranges=1) == [("k0", "k8")]
    assert contiguous_ranges(keys, set(), max_ranges=3) == []


def test_capped_ranges_split_a_large_update_into_runs_of_at_most_n_documents() -> None:
    keys = [f"k{i}" for i in range(10)]
    ranges = [("k0", "k6"), ("k8", "k9")]
    assert capped_ranges(ranges, keys, max_documents=3) == [
        ("k0", "k2"),
        ("k3", "k5"),
        ("k6", "k6"),
        ("k8", "k9"),
    ]
    assert capped_ranges(ranges, keys, max_documents=1) == [(k, k) for k in keys if k != "k7"]
    assert capped_ranges(ranges, keys, max_documents=0) == ranges  # no cap
    assert capped_ranges([], keys, max_documents=2) == []
