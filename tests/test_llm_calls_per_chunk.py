"""A build with an OpenAI-compatible provider makes at most two LLM calls per chunk (#31 item 6).

GraphRAG, LightRAG and nano-graphrag make 2.0 on the same passages; this project made 2.84-3.54
(a gleaning turn for every chunk, a report for every community). Counted per role with a
loopback server that plays the model (`tests/fakes/indexing_llm.py`); `bench/llm_calls.py`
measures the same on 100 MuSiQue passages.
"""

from __future__ import annotations

from pathlib import Path

import lancedb

from graphunified_assets.defs.resources import GraphUnifiedResource
from graphunified_assets.ops.indexing import index
from graphunified_query.core.layout import HomeLayout
from tests.fakes.indexing_llm import IndexingLLM, calls_by_role
from tests.fakes.openai_server import FakeOpenAIServer
from tests.fakes.voyage_server import FakeVoyageServer


def test_indexing_makes_at_most_two_llm_calls_per_chunk(home: Path, input_dir: Path) -> None:
    (input_dir / "harrow.md").write_text(  # the one chunk whose first reply is cut off at max_tokens
        "# Harrow Valley\n\nThe Harrow Valley Railway ran past the Hale Mill to Millbrook.\n"
    )
    with (
        FakeOpenAIServer(IndexingLLM(truncate="Harrow Valley Railway ran")) as llm,
        FakeVoyageServer() as voyage,
    ):
        (home / "settings.yaml").write_text(
            f"embedding:\n  provider: voyage\n  voyage_base_url: {voyage.base_url}\n"
            f"llm:\n  provider: openai_compatible\n  openai_base_url: {llm.base_url}\n  model: local\n"
        )
        resource = GraphUnifiedResource(home=str(home), input_dir=str(input_dir), voyage_api_key="test-key")
        index(resource, echo=lambda _: None)
        calls = calls_by_role(llm.bodies)
    db = lancedb.connect(str(HomeLayout.at(home).lancedb))
    chunks = db.open_table("chunk_vectors").count_rows()
    assert chunks == 4 and calls["extraction"] == chunks
    assert calls["gleaning"] == 1  # only the reply that hit max_tokens
    assert calls["summary"] == 0 and calls["report"] == 0  # nothing past the token budget
    assert sum(calls.values()) <= 2 * chunks
