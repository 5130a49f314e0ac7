"""The OpenAI-compatible provider against a loopback server speaking /v1/chat/completions.

Round trip, repair of malformed and truncated tool arguments, retries on 429/500, the JSON-mode
fallback for servers without tools, the validation-error repair loop of the extractor, and one
end-to-end `index` + `ask` of the sample corpus with `llm.provider: openai_compatible`.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from graphunified_assets.lib.extraction.chunk_failures import ChunkFailure
from graphunified_assets.lib.extraction.llm_extractor import LLMExtractor
from graphunified_assets.lib.extraction.records import ChunkText
from graphunified_assets.lib.reports.llm_reporter import LLMReporter
from graphunified_query.core.layout import HomeLayout
from graphunified_query.core.providers.claude import LLMError
from graphunified_query.core.providers.llm_cache import LLMCache
from graphunified_query.core.providers.openai_compatible import OpenAICompatibleClient
from graphunified_query.core.settings.model import LLMSettings, SettingsError, load_settings
from tests.fakes.openai_server import FakeOpenAIServer, Reply, text, tool_call

TOOL = {
    "name": "record_extraction",
    "description": "Record entities.",
    "input_schema": {"type": "object", "properties": {"entities": {"type": "array"}}},
}
FORCED = {"type": "tool", "name": "record_extraction"}
HALE = {"name": "Thomas Hale", "type": "PERSON", "description": "Founder of the Hale Mill."}
MILL = {"name": "Hale Mill", "type": "ORGANIZATION", "description": "A wool mill."}


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as fake:
        yield fake


def _client(
    server: FakeOpenAIServer, cache: LLMCache | None = None, **settings: Any
) -> OpenAICompatibleClient:
    llm = LLMSettings(
        provider="openai_compatible", openai_base_url=server.base_url, model="llama3.1:8b", **settings
    )
    return OpenAICompatibleClient(llm, cache=cache, base_delay=0.001)


def _extract(client: OpenAICompatibleClient, **kwargs: Any) -> Any:
    return client.create(
        system="Extract.",
        messages=[{"role": "user", "content": "Text"}],
        tools=[TOOL],
        tool_choice=FORCED,
        **kwargs,
    )


def test_round_trip_translates_tools_and_counts_tokens_at_zero_cost(server: FakeOpenAIServer) -> None:
    client = _client(server)
    server.enqueue(
        tool_call("record_extraction", {"entities": [HALE]}), text("The mill was founded in 1862.")
    )
    response = _extract(client)
    assert response.tool_input("record_extraction") == {"entities": [HALE]}
    assert response.stop_reason == "tool_use" and response.repaired == 0
    body = server.bodies[0]
    assert body["model"] == "llama3.1:8b"
    assert body["messages"][0] == {"role": "system", "content": "Extract."}
    assert body["tools"][0]["function"]["name"] == "record_extraction"
    assert body["tools"][0]["function"]["parameters"] == TOOL["input_schema"]
    assert body["tool_choice"] == {"type": "function", "function": {"name": "record_extraction"}}
    answer = client.create(
        system=[{"type": "text", "text": "Answer."}], messages=[{"role": "user", "content": "When?"}]
    )
    assert answer.text == "The mill was founded in 1862."
    assert "tools" not in server.bodies[1]
    ledger = client.ledger.as_metadata()
    assert ledger["llm_calls"] == 2 and ledger["input_tokens"] > 0 and ledger["output_tokens"] > 0
    assert ledger["cost_usd"] == 0.0  # a local endpoint with no entry in `prices`


def test_a_follow_up_turn_becomes_assistant_tool_calls_and_tool_messages(server: FakeOpenAIServer) -> None:
    client = _client(server)
    server.enqueue(
        tool_call("record_extraction", {"entities": [HALE]}), tool_call("record_extraction", {"entities": []})
    )
    first = _extract(client)
    call_id = first.content[0]["id"]
    messages = [
        {"role": "user", "content": "Text"},
        {"role": "assistant", "content": first.content},
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": call_id, "content": "Recorded."},
                {"type": "text", "text": "More?"},
            ],
        },
    ]
    client.create(system="Extract.", messages=messages, tools=[TOOL], tool_choice=FORCED)
    wire = server.bodies[1]["messages"]
    assert [m["role"] for m in wire] == ["system", "user", "assistant", "tool", "user"]
    assert wire[2]["tool_calls"][0]["id"] == call_id
    assert json.loads(wire[2]["tool_calls"][0]["function"]["arguments"]) == {"entities": [HALE]}
    assert wire[3] == {"role": "tool", "tool_call_id": call_id, "content": "Recorded."}


def test_malformed_arguments_are_repaired(server: FakeOpenAIServer) -> None:
    client = _client(server)
    fenced = '```json\n{"entities": [' + json.dumps(HALE) + ",]}\n```"  # fence and trailing comma
    server.enqueue(tool_call("record_extraction", fenced))
    response = _extract(client)
    assert response.tool_input("record_extraction") == {"entities": [HALE]}
    assert response.repaired == 1


def test_truncated_output_keeps_its_complete_records(server: FakeOpenAIServer) -> None:
    client = _client(server)
    cut = '{"entities": [' + json.dumps(HALE) + ", " + json.dumps(MILL) + ', {"name": "River Har'
    server.enqueue(tool_call("record_extraction", cut, finish_reason="length"))
    response = _extract(client)
    assert response.stop_reason == "max_tokens"
    assert response.tool_input("record_extraction") == {"entities": [HALE, MILL]}
    assert response.repaired == 1


def test_a_call_written_as_text_is_salvaged(server: FakeOpenAIServer) -> None:
    client = _client(server)
    server.enqueue(text('Sure! Here it is: {"entities": [' + json.dumps(HALE) + "]}"))
    assert _extract(client).tool_input("record_extraction") == {"entities": [HALE]}


def test_empty_content_is_an_empty_reply_not_a_crash(server: FakeOpenAIServer) -> None:
    client = _client(server)
    server.enqueue(text(None), Reply(content="", usage=False))
    assert _extract(client).content == []
    answer = client.create(system="s", messages=[{"role": "user", "content": "q"}])
    assert answer.text == "" and answer.usage.input_tokens > 0  # estimated when the server omits usage


@pytest.mark.parametrize("status", [429, 500, 503])
def test_transient_faults_are_retried(server: FakeOpenAIServer, status: int) -> None:
    client = _client(server)
    server.fail_next(status, times=2, retry_after="0")
    server.enqueue(tool_call("record_extraction", {"entities": [HALE]}))
    assert _extract(client).tool_input("record_extraction") == {"entities": [HALE]}
    assert len(server.requests) == 3
    assert client.ledger.as_metadata()["llm_calls"] == 1


def test_retries_are_bounded_and_the_key_is_never_shown(
    server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-123")
    client = _client(server, max_retries=2)
    server.fail_next(500, times=5, message="upstream died for key sk-secret-123")
    with pytest.raises(LLMError, match="after 3 attempts") as caught:
        _extract(client)
    assert len(server.requests) == 3
    assert "sk-secret-123" not in str(caught.value)
    assert server.requests[0][0]["authorization"] == "Bearer sk-secret-123"


def test_a_client_error_is_not_retried(server: FakeOpenAIServer) -> None:
    client = _client(server)
    server.fail_next(401, message="bad key")
    with pytest.raises(LLMError, match=r"refused the request.*HTTP 401"):
        _extract(client)
    assert len(server.requests) == 1


def test_a_server_without_tools_gets_json_mode(server: FakeOpenAIServer) -> None:
    server.reject_tools = True
    client = _client(server)
    server.enqueue(text(json.dumps({"entities": [HALE]})), text(json.dumps({"entities": []})))
    assert _extract(client).tool_input("record_extraction") == {"entities": [HALE]}
    assert client.mode == "json"
    retried = server.bodies[1]
    assert "tools" not in retried and retried["response_format"] == {"type": "json_object"}
    assert '"entities"' in retried["messages"][0]["content"]  # the schema is in the system prompt
    _extract(client, max_tokens=300)
    assert "tools" not in server.bodies[2]  # remembered: no second probe
    assert len(server.requests) == 3


def test_cached_responses_cost_no_request(server: FakeOpenAIServer, tmp_path: Path) -> None:
    cache = LLMCache(tmp_path / "llm.sqlite")
    server.enqueue(tool_call("record_extraction", '{"entities": [' + json.dumps(HALE) + ",]}"))
    first = _extract(_client(server, cache))
    again = _extract(_client(server, cache))
    assert len(server.requests) == 1
    assert again.cached and again.tool_input("record_extraction") == first.tool_input("record_extraction")
    assert again.repaired == 1


def test_settings_refuse_the_provider_without_an_endpoint(tmp_path: Path) -> None:
    (tmp_path / "settings.yaml").write_text("llm: {provider: openai_compatible}\n")
    with pytest.raises(SettingsError, match=r"llm\.openai_base_url"):
        load_settings(tmp_path, environ={})


def _extractor(server: FakeOpenAIServer, **kwargs: Any) -> LLMExtractor:
    return LLMExtractor(_client(server), entity_types=["PERSON", "ORGANIZATION"], **kwargs)


def test_extractor_feeds_the_validation_error_back_and_keeps_valid_records(server: FakeOpenAIServer) -> None:
    bad = {"entities": [{"name": "Thomas Hale"}, {"type": "PERSON"}]}  # every record invalid
    good = {
        "entities": [HALE, MILL, {"name": "", "type": "PERSON"}],  # one invalid record among valid ones
        "relationships": [{"source": "Thomas Hale", "target": "Hale Mill", "type": "FOUNDED", "strength": 9}],
        "facts": [{"subject": "Thomas Hale", "predicate": "founded", "object": "Hale Mill"}],
    }
    server.enqueue(tool_call("record_extraction", bad), tool_call("record_extraction", good))
    [result] = _extractor(server, max_gleanings=0).extract(
        [ChunkText("c1", "Thomas Hale founded the Hale Mill.")]
    )
    assert {e.name for e in result.entities} == {"Thomas Hale", "Hale Mill"}
    assert [r.type for r in result.relationships] == ["FOUNDED"] and len(result.facts) == 1
    assert result.dropped_records == 1  # the blank name; the failed first turn was repaired, not kept
    assert result.extra["repair_turns"] == 1 and result.extra["calls"] == 2
    feedback = server.bodies[1]["messages"]
    assert feedback[-2]["role"] == "tool" and "entities[0].type: Field required" in feedback[-2]["content"]


def test_extractor_repair_is_bounded_and_counts_a_failed_turn(server: FakeOpenAIServer) -> None:
    server.responder = lambda _: text("I cannot do that.")
    [outcome] = _extractor(server, max_gleanings=1, max_repairs=2).extract_each(
        [ChunkText("c1", "Some text.")]
    )
    assert len(server.requests) == 3  # one call and two repairs, then the turn is given up
    assert isinstance(outcome, ChunkFailure) and outcome.error is None
    assert "turn 0: no usable record_extraction call after 2 repair(s)" in outcome.reason
    assert outcome.partial.entities == () and outcome.partial.extra["failed_turns"] == 1
    assert "No record_extraction call" in server.bodies[1]["messages"][-1]["content"]


def test_extractor_reports_a_dead_server_as_a_chunk_failure(server: FakeOpenAIServer) -> None:
    server.fail_next(503, times=10)
    extractor = LLMExtractor(_client(server, max_retries=1), entity_types=["PERSON"])
    [outcome] = extractor.extract_each([ChunkText("c1", "Some text.")])
    assert isinstance(outcome, ChunkFailure) and isinstance(outcome.error, LLMError)
    assert "failed after 2 attempts" in outcome.reason
    with pytest.raises(LLMError):
        extractor.extract([ChunkText("c2", "Other text.")])


def test_extractor_salvages_truncated_output_and_gleans(server: FakeOpenAIServer) -> None:
    cut = '{"entities": [' + json.dumps(HALE) + ', {"name": "Hale'  # cut off inside the second record
    server.enqueue(
        tool_call("record_extraction", cut, finish_reason="length"),
        tool_call("record_extraction", {"entities": [MILL]}),
    )
    [result] = _extractor(server, max_gleanings=2).extract(
        [ChunkText("c1", "Thomas Hale founded the Hale Mill.")]
    )
    assert {e.name for e in result.entities} == {"Thomas Hale", "Hale Mill"}
    # The cut-off reply is gleaned; the gleaning reply ended on its own, so no third turn.
    assert result.extra["repaired_outputs"] == 1 and result.extra["calls"] == 2
    glean = server.bodies[1]["messages"]
    assert glean[-2]["role"] == "tool" and "MANY entities" in glean[-1]["content"]


def test_extractor_uses_the_tuned_prompts_of_extraction_prompt_dir(
    server: FakeOpenAIServer, tmp_path: Path
) -> None:
    from graphunified_assets.lib.extraction.selection import make_extractor
    from graphunified_query.core.settings.model import ExtractionSettings, Settings

    (tmp_path / "extract_system.md").write_text("Tuned: extract {entity_types}; prefer {relationship_types}.")
    (tmp_path / "glean.md").write_text("Tuned glean: anything else?\n")
    settings = Settings(
        llm=LLMSettings(provider="openai_compatible", openai_base_url=server.base_url, model="llama3.1:8b"),
        extraction=ExtractionSettings(
            entity_types=("PERSON",), relationship_types=("FOUNDED",), prompt_dir=tmp_path
        ),
    )
    extractor = make_extractor(settings, llm_cache=tmp_path / "llm.sqlite")
    assert isinstance(extractor, LLMExtractor)
    server.enqueue(
        tool_call("record_extraction", {"entities": [HALE]}, finish_reason="length"),  # gleaned
        tool_call("record_extraction", {"entities": []}),
    )
    extractor.extract([ChunkText("c1", "Thomas Hale founded the Hale Mill.")])
    first, glean = server.bodies[0]["messages"], server.bodies[1]["messages"]
    assert first[0] == {"role": "system", "content": "Tuned: extract PERSON; prefer FOUNDED."}
    assert glean[-1]["content"] == "Tuned glean: anything else?"


def test_reporter_repairs_an_invalid_report_once(server: FakeOpenAIServer) -> None:
    from graphunified_assets.lib.reports.context import community_context

    report = {
        "title": "Hale Mill",
        "summary": "The mill and its founder.",
        "rating": "7/10",
        "rating_explanation": "Central.",
        "findings": [{"summary": "Founded 1862", "explanation": "Thomas Hale founded it."}],
    }
    server.enqueue(tool_call("community_report", {"title": "x"}), tool_call("community_report", report))
    reporter = LLMReporter(_client(server))
    context = community_context(
        [], [], entities={}, relationships={}, sentences_of=lambda _: [], max_chars=1000
    )
    assert reporter(context, 2).rating == 7.0
    assert reporter.name == "openai_compatible:llama3.1:8b"
    assert server.bodies[1]["messages"][-2]["role"] == "tool"


# --- end to end: index + ask of the sample corpus through the loopback server --------------------

_NAMES = ("Thomas Hale", "Hale Mill", "River Harrow", "Eastfold", "Millbrook")


def _local_model(body: dict[str, Any]) -> Reply:
    """Answers extraction, report, summary and answer requests as a small local model might."""
    tools = [t["function"]["name"] for t in body.get("tools", [])]
    user = next(m["content"] for m in body["messages"] if m["role"] == "user")
    if "record_extraction" in tools:
        if any(m["role"] == "tool" for m in body["messages"]):
            return tool_call("record_extraction", {"entities": [], "relationships": [], "facts": []})
        found = [n for n in _NAMES if n in user]
        entities = [
            {"name": n, "type": "PERSON" if n == "Thomas Hale" else "LOCATION", "description": f"{n}."}
            for n in found
        ]
        related = [
            {"source": a, "target": b, "type": "RELATED_TO", "description": f"{a} and {b}.", "strength": 5}
            for a, b in itertools.pairwise(found)
        ]
        arguments = json.dumps({"entities": entities, "relationships": related, "facts": []})
        return tool_call("record_extraction", arguments[:-2])  # always cut off: salvage must work
    if "community_report" in tools:
        title = (re.findall(r"[A-Z][a-z]+ [A-Z][a-z]+", user) or ["Community"])[0]
        return tool_call("community_report", {
            "title": title, "summary": f"About {title}.", "rating": 5, "rating_explanation": "ok",
            "findings": [{"summary": title, "explanation": f"{title} is in the corpus."}],
        })  # fmt: skip
    if "map_points" in tools:
        return tool_call(
            "map_points", {"points": [{"description": "Thomas Hale founded the mill.", "score": 80}]}
        )
    return text("Thomas Hale founded the Hale Mill [Source: mill.md > Hale Mill].")


@pytest.mark.slow
def test_index_and_ask_end_to_end(home: Path, input_dir: Path) -> None:
    from graphunified_assets.defs.resources import GraphUnifiedResource
    from graphunified_assets.ops.indexing import index
    from graphunified_query.engine.query_engine import QueryEngine
    from tests.fakes.voyage_server import FakeVoyageServer

    with FakeOpenAIServer(_local_model) as server, FakeVoyageServer() as voyage:
        (home / "settings.yaml").write_text(
            f"embedding: {{provider: voyage, voyage_base_url: '{voyage.base_url}'}}\n"
            f"llm: {{provider: openai_compatible, openai_base_url: '{server.base_url}', model: 'qwen2.5:7b', "
            "max_gleanings: 1, summarize_above_tokens: 0}\n"  # every report by the model
        )
        resource = GraphUnifiedResource(home=str(home), input_dir=str(input_dir), voyage_api_key="test-key")
        index(resource, echo=lambda _: None)
        calls = len(server.requests)
        entities = pq.read_table(HomeLayout.at(home).table_path("entities")).to_pylist()
        assert {"Thomas Hale", "Eastfold", "River Harrow"} <= {e["title"] for e in entities}
        reports = pq.read_table(HomeLayout.at(home).table_path("community_reports")).to_pylist()
        assert reports and all(r["generator"] == "openai_compatible:qwen2.5:7b" for r in reports)
        engine = QueryEngine.open(home, environ={"VOYAGE_API_KEY": "test-key"})
        response = engine.ask("Who founded the Hale Mill?", "hybrid")
        assert response.answer == "Thomas Hale founded the Hale Mill [Source: mill.md > Hale Mill]."
        assert response.metadata["llm_calls"] == 1 and response.metadata["cost_usd"] == 0.0
        assert len(server.requests) == calls + 1
        overview = engine.ask("What are the main themes of the collection?", "graphrag_global")
        mapped = [b for b in server.bodies[calls + 1 :] if b.get("tools")]
        assert mapped and all(b["tools"][0]["function"]["name"] == "map_points" for b in mapped)
        assert overview.metadata["llm_calls"] == len(mapped) + 1  # the map calls and the answer
        sent = len(server.requests)
        index(resource, echo=lambda _: None)
        assert len(server.requests) == sent  # unchanged corpus: no LLM call


def test_resource_wires_the_provider_and_llm_reports_switches_reports_off(tmp_path: Path) -> None:
    from graphunified_assets.defs.resources import GraphUnifiedResource
    from graphunified_assets.lib.extraction.llm_summarizer import LLMSummarizer

    base = "llm: {provider: openai_compatible, openai_base_url: 'http://127.0.0.1:9/v1', model: m"
    (tmp_path / "settings.yaml").write_text(base + "}\n")
    resource = GraphUnifiedResource(home=str(tmp_path))
    assert isinstance(resource.extractor(), LLMExtractor)
    assert isinstance(resource.reporter(), LLMReporter)
    summarizer = resource.summarizer()
    assert isinstance(summarizer, LLMSummarizer) and isinstance(summarizer.client, OpenAICompatibleClient)
    (tmp_path / "settings.yaml").write_text(base + ", llm_reports: false}\n")
    assert GraphUnifiedResource(home=str(tmp_path)).reporter() is None
