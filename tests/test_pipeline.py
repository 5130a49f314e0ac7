"""The asset graph end to end: incremental by content hash, deletions, bad input, local models."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import lancedb
import pyarrow.parquet as pq
import pytest

from graphunified_assets.defs.resources import GraphUnifiedResource
from graphunified_assets.lib.ingest.index_state import IndexState
from graphunified_assets.ops.indexing import index
from graphunified_query.core.layout import HomeLayout
from tests.conftest import SAMPLE_DOCS
from tests.fakes.anthropic_server import FakeAnthropicServer, tool_use
from tests.fakes.voyage_server import FakeVoyageServer


@pytest.fixture
def voyage() -> Iterator[FakeVoyageServer]:
    with FakeVoyageServer() as server:
        yield server


def _resource(home: Path, input_dir: Path, voyage: FakeVoyageServer) -> GraphUnifiedResource:
    (home / "settings.yaml").write_text(
        f"embedding:\n  provider: voyage\n  voyage_base_url: {voyage.base_url}\n  batch_size: 2\n"
    )
    return GraphUnifiedResource(home=str(home), input_dir=str(input_dir), voyage_api_key="test-key")


def _embedded_texts(voyage: FakeVoyageServer) -> list[str]:
    return [text for _, body in voyage.requests for text in body["input"]]


def _embedded_documents(voyage: FakeVoyageServer, input_dir: Path) -> list[str]:
    """Texts sent to the embedding server that are whole input documents (i.e. their one chunk)."""
    documents = {p.read_text() for p in input_dir.rglob("*") if p.is_file()}
    return [text for text in _embedded_texts(voyage) if text in documents]


def _vector_rows(home: Path) -> dict[str, int]:
    table = lancedb.connect(str(HomeLayout.at(home).lancedb)).open_table("chunk_vectors").to_arrow()
    counts: dict[str, int] = {}
    for document_id in table.column("document_id").to_pylist():
        counts[document_id] = counts.get(document_id, 0) + 1
    return counts


def test_only_changed_documents_are_recomputed(home: Path, input_dir: Path, voyage: FakeVoyageServer) -> None:
    resource = _resource(home, input_dir, voyage)
    first = index(resource, echo=lambda _: None)
    assert sorted(first.plan.new) == ["flood.txt", "mill.md", "people/thomas-hale.md"]
    assert len(_embedded_documents(voyage, input_dir)) == 3  # one chunk per short document
    sent = len(_embedded_texts(voyage))  # chunks plus entity, relationship and fact texts
    assert set(_vector_rows(home)) == {"flood.txt", "mill.md", "people/thomas-hale.md"}
    layout = HomeLayout.at(home)
    untouched = layout.partition_path("text_units", "mill.md")
    mtime = untouched.stat().st_mtime_ns

    # Dagster knows each input's content hash as the data version of its raw_documents partition.
    record = dg.DagsterInstance.get().get_latest_data_version_record(
        dg.AssetKey("raw_documents"), partition_key="mill.md"
    )
    assert record is not None and record.asset_observation is not None
    mill_hash = IndexState(layout.index_state).indexed_hashes()["mill.md"]
    assert record.asset_observation.tags["dagster/data_version"] == mill_hash

    again = index(resource, echo=lambda _: None)
    assert again.plan.pending == () and again.runs == 0
    assert len(_embedded_texts(voyage)) == sent  # no embedding call at all

    (input_dir / "flood.txt").write_text("The Great Flood\nIn 1894 the River Harrow flooded Eastfold.\n")
    changed = index(resource, echo=lambda _: None)
    assert changed.plan.changed == ("flood.txt",)
    # Now-current documents sent over both runs: the two untouched ones once, the edit once.
    assert sorted(_embedded_documents(voyage, input_dir)) == sorted(
        [SAMPLE_DOCS["mill.md"], SAMPLE_DOCS["people/thomas-hale.md"], (input_dir / "flood.txt").read_text()]
    )
    assert untouched.stat().st_mtime_ns == mtime  # other documents' tables were not rewritten


def test_deleting_a_document_removes_its_rows(home: Path, input_dir: Path, voyage: FakeVoyageServer) -> None:
    resource = _resource(home, input_dir, voyage)
    index(resource, echo=lambda _: None)
    (input_dir / "mill.md").unlink()
    report = index(resource, echo=lambda _: None)
    assert report.plan.removed == ("mill.md",)
    layout = HomeLayout.at(home)
    for table in ("documents", "text_units", "chunk_embeddings"):
        assert not layout.partition_path(table, "mill.md").exists()
    assert set(_vector_rows(home)) == {"flood.txt", "people/thomas-hale.md"}
    assert "mill.md" not in IndexState(layout.index_state).indexed_hashes()
    # The UI shows the refreshed index: row counts, pruning and per-format statistics.
    event = dg.DagsterInstance.get().get_latest_materialization_event(dg.AssetKey("chunk_vectors"))
    assert event is not None and event.asset_materialization is not None
    metadata = event.asset_materialization.metadata
    assert metadata["rows"].value == 2
    assert metadata["pruned_documents"].value == 1
    assert "| md | 1 |" in metadata["corpus"].value and "| txt | 1 |" in metadata["corpus"].value


def test_bad_input_is_reported_and_the_rest_indexes(
    home: Path, input_dir: Path, voyage: FakeVoyageServer
) -> None:
    (input_dir / "empty.txt").write_text("")
    (input_dir / "binary.txt").write_bytes(b"\x00\x01\x02binary\x00")
    (input_dir / "latin1.txt").write_bytes("Caf\xe9 au lait".encode("latin-1"))
    (input_dir / "corpus.jsonl").write_text(
        '{"id": "a", "title": "A", "text": "Alpha text."}\n'
        "{not json\n"
        '{"id": "b", "title": "B", "text": "Beta."}\n'
    )
    messages: list[str] = []
    report = index(_resource(home, input_dir, voyage), echo=messages.append)
    problems = {p.source for p in report.problems}
    assert {"empty.txt", "binary.txt", "latin1.txt", "corpus.jsonl:2"} <= problems
    assert any("corpus.jsonl:2" in m for m in messages)
    indexed = IndexState(HomeLayout.at(home).index_state).indexed_hashes()
    assert {"corpus.jsonl#a", "corpus.jsonl#b", "mill.md", "flood.txt", "people/thomas-hale.md"} == set(
        indexed
    )
    failures = {f.source for f in IndexState(HomeLayout.at(home).index_state).failures()}
    assert "corpus.jsonl:2" in failures


@pytest.mark.slow
def test_local_models_index_the_bundled_sample(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("VOYAGE_API_KEY", raising=False)
    sample = Path(__file__).resolve().parents[1] / "data" / "sample"
    resource = GraphUnifiedResource(home=str(home), input_dir=str(sample))
    report = index(resource, echo=lambda _: None)
    assert report.problems == []
    rows = _vector_rows(home)
    assert len(rows) == len(report.plan.new) >= 20
    table = lancedb.connect(str(HomeLayout.at(home).lancedb)).open_table("chunk_vectors").to_arrow()
    assert set(table.column("model").to_pylist()) == {"all-MiniLM-L6-v2"}
    assert table.schema.field("vector").type.list_size == 384


def test_entities_link_mentions_across_documents(
    home: Path, input_dir: Path, voyage: FakeVoyageServer
) -> None:
    index(_resource(home, input_dir, voyage), echo=lambda _: None)
    layout = HomeLayout.at(home)
    entities = {(e["title"], e["type"]): e for e in pq.read_table(layout.table_path("entities")).to_pylist()}
    chunks = pq.read_table(layout.partition_dir("text_units")).to_pylist()
    document_of = {c["id"]: c["document_id"] for c in chunks}
    hale = entities[("Thomas Hale", "PERSON")]
    assert {document_of[c] for c in hale["text_unit_ids"]} == {"mill.md", "people/thomas-hale.md"}
    facts = pq.read_table(layout.table_path("facts")).to_pylist()
    assert any(f["subject"] == "Thomas Hale" and "born" in f["predicate"] for f in facts)
    db = lancedb.connect(str(layout.lancedb))
    assert db.open_table("entity_vectors").count_rows() == len(entities)
    assert db.open_table("fact_vectors").count_rows() == len(facts)


def test_claude_extraction_through_dagster(home: Path, input_dir: Path, voyage: FakeVoyageServer) -> None:
    def responder(body: dict[str, object]) -> list[dict[str, object]]:
        chunk = str(body["messages"][0]["content"])  # type: ignore[index]
        names = [n for n in ("Thomas Hale", "Eastfold", "River Harrow") if n in chunk]
        entities = [{"name": n, "type": "PERSON" if n == "Thomas Hale" else "LOCATION"} for n in names]
        return tool_use("record_extraction", {"entities": entities, "relationships": [], "facts": []})

    with FakeAnthropicServer(responder) as claude:
        _resource(home, input_dir, voyage)  # writes the Voyage settings
        settings = home / "settings.yaml"
        settings.write_text(
            settings.read_text() + f"llm:\n  base_url: {claude.base_url}\n  max_gleanings: 0\n"
        )
        resource = GraphUnifiedResource(
            home=str(home), input_dir=str(input_dir), voyage_api_key="test-key", anthropic_api_key="test-key"
        )
        index(resource, echo=lambda _: None)
        assert len(claude.requests) == 3  # one call per chunk
        (input_dir / "flood.txt").write_text("The Great Flood\nThe River Harrow flooded Eastfold in 1894.\n")
        index(resource, echo=lambda _: None)
        assert len(claude.requests) == 4  # only the edited document is sent again
    layout = HomeLayout.at(home)
    titles = {(e["title"], e["type"]) for e in pq.read_table(layout.table_path("entities")).to_pylist()}
    assert titles == {("Thomas Hale", "PERSON"), ("Eastfold", "LOCATION"), ("River Harrow", "LOCATION")}
    event = dg.DagsterInstance.get().get_latest_materialization_event(dg.AssetKey("extractions"))
    assert event is not None and event.asset_materialization is not None
    metadata = event.asset_materialization.metadata
    assert metadata["llm_calls"].value == 1 and metadata["cost_usd"].value > 0


def test_budget_cap_stops_extraction_cleanly(home: Path, input_dir: Path, voyage: FakeVoyageServer) -> None:
    with FakeAnthropicServer(lambda _: tool_use("record_extraction", {"entities": []})) as claude:
        _resource(home, input_dir, voyage)  # writes the Voyage settings
        settings = home / "settings.yaml"
        base = settings.read_text()
        settings.write_text(base + f"llm:\n  base_url: {claude.base_url}\n  budget_usd: 0.000001\n")
        resource = GraphUnifiedResource(
            home=str(home), input_dir=str(input_dir), voyage_api_key="test-key", anthropic_api_key="test-key"
        )
        messages: list[str] = []
        with pytest.raises(RuntimeError, match="extractions"):
            index(resource, echo=messages.append)
        assert any("Claude extraction estimate: 3 chunks, 6 calls" in m for m in messages)
        assert claude.requests == []  # stopped before sending anything over budget
        settings.write_text(base + f"llm:\n  base_url: {claude.base_url}\n  budget_usd: 5\n")
        resumed = GraphUnifiedResource(
            home=str(home), input_dir=str(input_dir), voyage_api_key="test-key", anthropic_api_key="test-key"
        )
        index(resumed, echo=lambda _: None)
        assert len(claude.requests) == 3  # three chunks; no reply cut off at max_tokens, no gleaning
