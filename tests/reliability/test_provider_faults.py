"""Provider faults lose nothing and repeat nothing (issue #8): client retries, then per-document isolation.

(a) Each fault kind at the loopback fake Anthropic and Voyage servers: a transient one is retried
and succeeds, a persistent one ends in a clear error after the bounded attempts.
(b) Through Dagster on a small corpus: one document's chunk fails for good; the other documents
complete, the failure is recorded and reported; after the fault clears, `index` retries only that
document and the tables equal a clean run's.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dagster as dg
import pyarrow.parquet as pq
import pytest

from graphunified_assets.defs.resources import GraphUnifiedResource
from graphunified_assets.lib.extraction.chunk_failures import ChunkFailure
from graphunified_assets.lib.extraction.llm_extractor import LLMExtractor
from graphunified_assets.lib.extraction.records import ChunkText
from graphunified_assets.lib.extraction.tool_turns import TOOL_NAME
from graphunified_assets.lib.ingest.index_state import IndexState
from graphunified_assets.ops.indexing import index
from graphunified_query.core.layout import HomeLayout
from graphunified_query.core.providers.claude import ClaudeClient, LLMError
from graphunified_query.core.providers.embedding import EmbeddingError
from graphunified_query.core.providers.llm_cache import LLMCache, request_key
from graphunified_query.core.providers.voyage_embedder import VoyageEmbedder
from graphunified_query.core.settings.model import LLMSettings, Settings
from tests.fakes.anthropic_server import FakeAnthropicServer, tool_use
from tests.fakes.fault_corpus import (
    FAILING,
    FAILING_DOCUMENT,
    is_extraction,
    is_failing_extraction,
    respond,
    settings_yaml,
    write_corpus,
)
from tests.fakes.voyage_server import FakeVoyageServer

KEY = "test-key"
RETRIES = 2  # attempts = RETRIES + 1
TIMEOUT = 0.3  # the clients' timeout; an injected stall outlasts it
# HTTP-status faults (retry-after "0.1" on the 429: honoured, and short) and broken exchanges.
STATUS_FAULTS = {"429": (429, "0.1"), "500": (500, None), "529": (529, None)}
WIRE_FAULTS = ("reset", "timeout", "truncated", "malformed_json")
CONTENT_FAULTS = ("malformed_tool_input", "empty_completion")  # a 200 the caller cannot use


def _inject(server: FakeAnthropicServer | FakeVoyageServer, fault: str, times: int) -> None:
    if fault in STATUS_FAULTS:
        status, retry_after = STATUS_FAULTS[fault]
        server.fail_next(status, times=times, retry_after=retry_after)
    else:
        server.inject(fault, times=times, stall_seconds=TIMEOUT * 3)  # type: ignore[arg-type]


def _claude(server: FakeAnthropicServer, tmp_path: Path) -> ClaudeClient:
    settings = LLMSettings(
        base_url=server.base_url, max_retries=RETRIES, timeout_seconds=TIMEOUT, retry_base_seconds=0.01
    )
    return ClaudeClient(settings, Settings().prices, api_key=KEY, cache=LLMCache(tmp_path / "llm.sqlite"))


def _ask(client: ClaudeClient) -> Any:
    return client.create(system="s", messages=[{"role": "user", "content": "hello"}])


@pytest.mark.parametrize("fault", [*STATUS_FAULTS, *WIRE_FAULTS])
def test_claude_retries_a_transient_fault_and_gives_up_clearly_on_a_persistent_one(
    fault: str, tmp_path: Path
) -> None:
    with FakeAnthropicServer(api_key=KEY) as server:
        client = _claude(server, tmp_path)
        _inject(server, fault, times=1)
        started = time.perf_counter()
        assert _ask(client).text == "ok"
        assert len(server.requests) == 2
        if fault == "429":
            assert time.perf_counter() - started >= 0.1  # retry-after honoured
        _inject(server, fault, times=RETRIES + 1)
        with pytest.raises(LLMError, match=rf"failed after {RETRIES + 1} attempts") as error:
            client.create(system="s", messages=[{"role": "user", "content": "another"}])
    assert len(server.requests) == 2 + RETRIES + 1  # bounded: no attempt beyond llm.max_retries
    assert KEY not in str(error.value)


EXTRACTION = {"entities": [{"name": "Hale Mill", "type": "ORGANIZATION", "description": "A mill."}]}


@pytest.mark.parametrize("fault", CONTENT_FAULTS)
def test_unusable_answers_get_one_repair_then_fail_the_chunk_and_leave_no_cache_entry(
    fault: str, tmp_path: Path
) -> None:
    chunks = [ChunkText("c1", "The Hale Mill."), ChunkText("c2", "The Hale Mill again.")]
    with FakeAnthropicServer(lambda _: tool_use(TOOL_NAME, EXTRACTION), api_key=KEY) as server:
        extractor = LLMExtractor(_claude(server, tmp_path), entity_types=["ORGANIZATION"], max_gleanings=0)
        _inject(server, fault, times=1)  # transient: the repair turn gets a good answer
        first = extractor.extract_each(chunks[:1])
        assert [e.name for e in first[0].entities] == ["Hale Mill"]  # type: ignore[union-attr]
        server.fail_matching(lambda body: "again" in str(body["messages"][0]), kind=fault)  # type: ignore[arg-type]
        second = extractor.extract_each(chunks)
        sent = len(server.requests)
    failure = second[1]
    assert isinstance(failure, ChunkFailure) and failure.chunk_id == "c2" and failure.error is None
    expected = "malformed record_extraction input" if fault == "malformed_tool_input" else "empty completion"
    assert expected in failure.reason
    assert not isinstance(second[0], ChunkFailure)  # the other chunk is untouched (from the cache)
    assert sent == 2 + 2  # c1 cached; c2's call and its one repair
    # The unusable answers are not cached: the next run asks Claude again instead of replaying them.
    cache = LLMCache(tmp_path / "llm.sqlite")
    assert all(cache.get(request_key(body)) is None for body in server.bodies[2:])


@pytest.mark.parametrize("fault", [*STATUS_FAULTS, *WIRE_FAULTS, "empty_completion"])
def test_voyage_retries_a_transient_fault_and_gives_up_clearly_on_a_persistent_one(fault: str) -> None:
    with FakeVoyageServer(api_key=KEY) as server:
        embedder = VoyageEmbedder(
            KEY, base_url=server.base_url, max_retries=RETRIES, timeout=TIMEOUT, base_delay=0.01
        )
        _inject(server, fault, times=1)
        assert embedder.embed(["a river", "a mill"]).shape == (2, server.dimension)
        assert len(server.requests) == 2
        _inject(server, fault, times=RETRIES + 1)
        with pytest.raises(EmbeddingError, match=rf"failed after {RETRIES + 1} attempts") as error:
            embedder.embed(["another text"])
    assert len(server.requests) == 2 + RETRIES + 1
    assert KEY not in str(error.value)


# --- (b) the pipeline -------------------------------------------------------------------------


@pytest.fixture
def servers() -> Iterator[tuple[FakeAnthropicServer, FakeVoyageServer]]:
    with FakeAnthropicServer(respond, api_key=KEY) as claude, FakeVoyageServer(api_key=KEY) as voyage:
        yield claude, voyage


def _home(path: Path, claude: FakeAnthropicServer, voyage: FakeVoyageServer) -> Path:
    path.mkdir()
    (path / "settings.yaml").write_text(settings_yaml(claude.base_url, voyage.base_url))
    return path


def _resource(home: Path, input_dir: Path) -> GraphUnifiedResource:
    return GraphUnifiedResource(
        home=str(home), input_dir=str(input_dir), voyage_api_key=KEY, anthropic_api_key=KEY
    )


def _rows(layout: HomeLayout, table: str, key: str) -> list[dict[str, Any]]:
    rows = pq.read_table(layout.table_path(table)).drop_columns(["indexed_at"])  # when, not what
    return sorted(rows.to_pylist(), key=lambda r: str(r[key]))


def test_a_failing_chunk_fails_only_its_document_and_the_next_index_retries_only_it(
    tmp_path: Path, servers: tuple[FakeAnthropicServer, FakeVoyageServer]
) -> None:
    claude, voyage = servers
    input_dir = write_corpus(tmp_path / "input")
    home = _home(tmp_path / "faulty", claude, voyage)
    layout = HomeLayout.at(home)
    claude.fail_matching(is_failing_extraction, status=500, retry_after="0")
    index(_resource(home, input_dir), echo=lambda _: None)

    # The other documents complete; the failed one has no extractions file (so it is "incomplete").
    present = {p.stem for p in layout.partition_dir("extractions").glob("*.parquet")}
    failing_doc = FAILING_DOCUMENT
    assert not (layout.partition_path("extractions", failing_doc)).exists()
    assert len(present) == 2
    assert FAILING not in {r["title"] for r in _rows(layout, "entities", "title")}
    (failure,) = [f for f in IndexState(layout.index_state).failures() if f.stage == "extract"]
    assert failure.source == failing_doc
    assert (
        "chunk " in failure.reason and "HTTP 500" in failure.reason and "after 2 attempts" in failure.reason
    )
    assert KEY not in failure.reason
    records = dg.DagsterInstance.get().fetch_materializations(dg.AssetKey("extractions"), limit=10).records
    metadata = [r.asset_materialization.metadata for r in records if r.asset_materialization]
    assert any(m.get("failed_documents") == dg.IntMetadataValue(1) for m in metadata)
    assert any(failing_doc in str(m.get("failures")) for m in metadata)

    # The fault clears: only the failed document's chunk reaches Claude's extraction again.
    claude.clear_faults()
    first_run = len(claude.requests)
    answered = {request_key(body) for body in claude.ok_bodies()}
    index(_resource(home, input_dir), echo=lambda _: None)
    resumed = claude.bodies[first_run:]
    extraction_calls = [b for b in resumed if is_extraction(b)]
    assert extraction_calls and all(is_failing_extraction(b) for b in extraction_calls)
    assert not [b for b in resumed if request_key(b) in answered]  # nothing answered is asked again
    assert [f for f in IndexState(layout.index_state).failures() if f.stage == "extract"] == []

    # A clean run of the same corpus gives the same tables.
    clean = _home(tmp_path / "clean", claude, voyage)
    index(_resource(clean, write_corpus(tmp_path / "input-clean")), echo=lambda _: None)
    clean_layout = HomeLayout.at(clean)
    for table, key in (("entities", "title"), ("relationships", "id")):
        assert _rows(layout, table, key) == _rows(clean_layout, table, key), table
    for document in ("flood.txt", "mill.md"):
        faulty = pq.read_table(layout.partition_path("extractions", document)).to_pylist()
        assert faulty == pq.read_table(clean_layout.partition_path("extractions", document)).to_pylist()
