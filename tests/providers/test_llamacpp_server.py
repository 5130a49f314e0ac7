"""The OpenAI-compatible provider against a real llama.cpp server (not a fake written for tests).

A 135M-parameter model on two CPU cores indexes three short documents and answers one question
through `llm.provider: openai_compatible` with `openai_structured_output: json_schema`. The model is
tiny, so this asserts the wire path and the salvage accounting, not quality: every extraction call
ends in schema-valid records or counted drops and repairs, no chunk is lost, the answer comes back
with its cited contexts, usage is recorded, and a second run makes no call. Figures are printed
(`pytest -s`) for the record.
"""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from graphunified_query.core.layout import HomeLayout

pytest.importorskip("xllamacpp", reason="dev dependency: pip install -e '.[dev]'")

DOCS = {
    "mill.md": "# Hale Mill\n\nThomas Hale founded the Hale Mill in Eastfold in 1862.\n",
    "river.md": "# River Harrow\n\nThe River Harrow flooded Eastfold in 1894 and closed the Hale Mill.\n",
    "school.md": "# Eastfold School\n\nMary Hale opened the Eastfold School in 1901.\n",
}
SYSTEM = "Extract entities ({entity_types}) and relationships from the text. Use exact names from the text.\n"


@pytest.mark.slow
def test_index_and_ask_through_a_real_llamacpp_server(home: Path, tmp_path: Path) -> None:
    from graphunified_assets.defs.resources import GraphUnifiedResource
    from graphunified_assets.ops.indexing import index
    from graphunified_query.core.providers.llm_cache import LLMCache
    from graphunified_query.engine.query_engine import QueryEngine
    from tests.providers.llamacpp_server import llamacpp_server

    started = time.perf_counter()
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for name, text in DOCS.items():
        (corpus / name).write_text(text, encoding="utf-8")
    prompts = tmp_path / "prompts"
    prompts.mkdir()
    (prompts / "extract_system.md").write_text(SYSTEM, encoding="utf-8")
    with llamacpp_server() as base_url:
        (home / "settings.yaml").write_text(
            "llm: {provider: openai_compatible, "
            f"openai_base_url: '{base_url}', model: smollm2-135m, "
            "openai_structured_output: json_schema, max_tokens: 96, max_gleanings: 0, "
            "llm_reports: false, concurrency: 1, max_retries: 1, timeout_seconds: 300}\n"
            f"extraction: {{prompt_dir: '{prompts}', entity_types: [PERSON, LOCATION, ORGANIZATION]}}\n"
            "query: {answer_max_tokens: 64}\n"
        )
        resource = GraphUnifiedResource(home=str(home), input_dir=str(corpus))
        index(resource, echo=lambda _: None)
        layout = HomeLayout.at(home)
        cache = LLMCache(layout.llm_cache)
        calls_after_index = len(cache)

        files = sorted(layout.partition_dir("extractions").glob("*.parquet"))
        extractions = [row for f in files for row in pq.read_table(f).to_pylist()]
        figures = _figures(extractions, _cached_answers(layout.llm_cache))
        assert figures["chunks"] == len(DOCS)  # nothing lost: every chunk has its extraction row
        assert figures["extraction_calls"] >= len(DOCS)  # one per chunk, plus any repair turns
        for row in extractions:  # what was kept passed validation (ExtractedEntity in the table)
            assert all(e["name"] and e["type"] for e in row["entities"])

        engine = QueryEngine.open(home, environ={})
        response = engine.ask("Who founded the Hale Mill?", "hybrid")
        assert response.answer and response.contexts  # the answer with the contexts it cites
        assert response.metadata["llm_calls"] == 1 and response.metadata["tokens_used"] > 0
        assert engine.llm is not None and engine.llm.ledger.calls >= 1  # usage recorded
        assert len(cache) == calls_after_index + 1

        index(resource, echo=lambda _: None)  # unchanged corpus
        again = QueryEngine.open(home, environ={}).ask("Who founded the Hale Mill?", "hybrid")
        assert len(cache) == calls_after_index + 1  # the re-run made no new call
        assert again.answer == response.answer and again.metadata["cached"]
        assert again.metadata["llm_calls"] == 0 and again.metadata["cost_usd"] == 0.0
        assert again.metadata["cached_tokens"] == response.metadata["tokens_used"]
    figures |= {
        "answer_calls": 1,
        "answer": response.answer[:120],
        "answer_tokens_used": response.metadata["tokens_used"],  # input + output
        "seconds": round(time.perf_counter() - started, 1),
    }
    print("llama.cpp figures:", json.dumps(figures))


def _cached_answers(path: Path) -> list[dict[str, Any]]:
    with sqlite3.connect(path) as db:
        return [json.loads(row[0]) for row in db.execute("select response from responses")]


def _figures(rows: list[dict[str, Any]], answers: list[dict[str, Any]]) -> dict[str, Any]:
    """Records kept and dropped (the table), calls and repairs (the LLM cache: one entry per call)."""
    extraction = [a for a in answers if any(b.get("name") == "record_extraction" for b in a["content"])]
    return {
        "chunks": len(rows),
        "entities": sum(len(r["entities"]) for r in rows),
        "relationships": sum(len(r["relationships"]) for r in rows),
        "dropped": sum(int(r["dropped_records"]) for r in rows),
        "extraction_calls": len(extraction),
        "repair_turns": len(extraction) - len(rows),
        "repaired_outputs": sum(int(a.get("repaired", 0)) for a in extraction),
        "output_tokens": sum(int(a["usage"]["output_tokens"]) for a in answers),
    }
