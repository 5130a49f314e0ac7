"""The HTTP service over a real socket: the CLI's JSON, input checks, health, schema, loopback default."""

from __future__ import annotations

import json
import socket
import urllib.error
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from graphunified_query.cli import main
from graphunified_query.engine.query_engine import QueryEngine
from graphunified_query.engine.request import QueryRequest
from graphunified_query.engine.switches import SWITCHES, flag
from graphunified_query.server import run
from graphunified_query.server.app import create_app
from tests.serving import loopback_client, serving

if TYPE_CHECKING:
    pass  # unresolvable at run time, as a retriever's type-only import would be

KEYS = {
    "answer",
    "strategy",
    "contexts",
    "expanded_contexts",
    "metadata",
}  # ask --json's
CONTEXT_KEYS = {"text", "score", "source", "chunk_id", "document_id", "metadata"}
QUESTION = "Who founded the Hale Mill?"
# Timings differ from one call to the next; everything else in the object must not.
TIMINGS = {"latency_ms", "retrieval_latency_ms", "generation_latency_ms"}


@pytest.fixture(scope="module")
def base_url(engine: QueryEngine) -> Iterator[str]:
    with serving(create_app(engine)) as (host, port):  # the default host
        yield f"http://{host}:{port}"


def call(base_url: str, path: str, body: Any = None, *, raw: bytes | None = None) -> tuple[int, Any]:
    data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
    request = urllib.request.Request(base_url + path, data=data, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=120) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as error:
        text = error.read().decode()
        assert "Traceback" not in text
        return error.code, json.loads(text)


def test_default_bind_is_loopback(monkeypatch: pytest.MonkeyPatch) -> None:
    listener = run.bind(port=0)
    try:
        assert listener.getsockname()[0] == "127.0.0.1"
    finally:
        listener.close()
    seen: dict[str, Any] = {}
    monkeypatch.setattr(run, "serve", lambda home, host, port: seen.update(host=host, port=port) or 0)
    assert main(["serve"]) == 0
    assert seen == {"host": run.DEFAULT_HOST, "port": run.DEFAULT_PORT} and run.DEFAULT_HOST == "127.0.0.1"


def test_other_hosts_are_served_with_a_warning(
    engine: QueryEngine, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    served: list[socket.socket] = []

    class Server:
        def run(self, sockets: list[socket.socket]) -> None:
            served.extend(sockets)

    monkeypatch.setattr(QueryEngine, "open", lambda home, environ: engine)
    monkeypatch.setattr(run, "make_server", lambda app: Server())
    monkeypatch.setattr(run, "bind", lambda host, port: socket.create_server(("127.0.0.1", 0)))
    assert run.serve("data", "0.0.0.0", 0) == 0
    served[0].close()
    assert "warning: serving on 0.0.0.0" in capsys.readouterr().err
    assert run.is_loopback("::1") and run.is_loopback("localhost") and not run.is_loopback("example.org")


def test_missing_index_is_the_cli_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ask", "anything", "--home", str(tmp_path)]) == 2
    ask_error = capsys.readouterr().err
    assert main(["serve", "--home", str(tmp_path), "--port", "0"]) == 2
    assert capsys.readouterr().err == ask_error and "python -m graphunified_assets index" in ask_error


def test_health(base_url: str, engine: QueryEngine) -> None:
    status, health = call(base_url, "/health")
    assert status == 200 and health["status"] == "ok"
    assert health["home"] == str(engine.snapshot.home) and health["chunks"] == len(engine.snapshot.chunks.ids)
    assert health["strategies"] == [*engine.strategies, "auto"]


@pytest.mark.parametrize("switch", [None, *SWITCHES])
def test_ask_is_the_cli_json(
    base_url: str,
    built_home: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    switch: str | None,
) -> None:
    """The same object over HTTP and from `ask --json`, with each of the request's switches on
    (an HTTP field and a CLI flag declared once, engine/switches.py) and with none."""
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    body = {"question": QUESTION, "strategy": "hybrid", "top_k": 3} | ({switch: True} if switch else {})
    status, served = call(base_url, "/ask", body)
    assert status == 200 and set(served) == KEYS | ({"evidence"} if switch == "evidence" else set())
    if switch == "retrieve_only":
        assert served["answer"] is None
    else:
        assert "Thomas Hale" in served["answer"]
    assert served["contexts"] and all(set(c) == CONTEXT_KEYS for c in served["contexts"])
    argv = ["ask", QUESTION, "--strategy", "hybrid", "--top-k", "3", "--home", str(built_home), "--json"]
    assert main([*argv, *([flag(switch)] if switch else [])]) == 0
    printed = json.loads(capsys.readouterr().out)
    for payload in (served, printed):
        for key in (*TIMINGS, "result_cache"):  # the server's cache may hold it; a fresh CLI's not
            payload["metadata"].pop(key)
    assert served == printed


def test_the_switches_are_the_requests_boolean_fields() -> None:
    """What the CLI declares a flag for is what the request model takes as a boolean."""
    assert {n for n, f in QueryRequest.model_fields.items() if f.annotation is bool} == set(SWITCHES)


def test_retrieve_and_auto(base_url: str) -> None:
    status, retrieved = call(base_url, "/retrieve", {"question": QUESTION, "strategy": "naive", "top_k": 2})
    assert status == 200 and set(retrieved) == KEYS and retrieved["answer"] is None
    assert 1 <= len(retrieved["contexts"]) <= 2 and retrieved["metadata"]["llm_calls"] == 0
    status, routed = call(base_url, "/ask", {"question": QUESTION, "retrieve_only": True})
    assert status == 200 and routed["answer"] is None and routed["metadata"]["router_reason"]
    status, local = call(
        base_url, "/retrieve", {"question": QUESTION, "strategy": "lightrag", "params": {"mode": "local"}}
    )
    assert status == 200 and local["strategy"] == "lightrag"
    # LightRAG's dual-level keywords: the params model's fields are the request's params.
    keyed = {"dual_keywords": True, "keyword_weight": 0.8}
    body = {"question": QUESTION, "strategy": "lightrag", "params": keyed}
    status, dual = call(base_url, "/retrieve", body)
    assert status == 200 and dual["metadata"]["retrieval_keywords"]["low_level"]
    assert dual["metadata"]["retrieval_explain"].startswith("lightrag hybrid (offline keywords)")


def test_concurrent_requests(base_url: str) -> None:
    body = {"question": QUESTION, "strategy": "naive", "top_k": 2}
    with ThreadPoolExecutor(4) as pool:
        replies = list(pool.map(lambda _: call(base_url, "/retrieve", body), range(8)))
    assert {status for status, _ in replies} == {200}
    assert len({json.dumps(r["contexts"]) for _, r in replies}) == 1


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"question": ""}, ["body", "question"]),
        ({"question": "   "}, ["body", "question"]),
        ({}, ["body", "question"]),
        ({"question": QUESTION, "strategy": "nope"}, ["body", "strategy"]),
        ({"question": QUESTION, "top_k": 0}, ["body", "top_k"]),
        ({"question": QUESTION, "top_k": 1_000_000}, ["body", "top_k"]),
        ({"question": QUESTION, "top_k": "5"}, ["body", "top_k"]),
        ({"question": QUESTION, "topk": 5}, ["body", "topk"]),
        ({"question": QUESTION, "strategy": "hybrid", "params": {"bogus": 1}}, ["body", "params", "bogus"]),
        ({"question": QUESTION, "params": {"bogus": 1}}, ["body", "params", "bogus"]),
        ({"question": QUESTION, "strategy": "naive", "params": {"top_k": 3}}, ["body", "params", "top_k"]),
        (
            {"question": QUESTION, "strategy": "lightrag", "params": {"mode": "up"}},
            ["body", "params", "mode"],
        ),
        (
            {"question": QUESTION, "strategy": "graphrag_local", "params": {"max_hops": "many"}},
            ["body", "params", "max_hops"],
        ),
        (
            {"question": QUESTION, "strategy": "expanded", "params": {"chunk_weight": 3}},
            ["body", "params", "chunk_weight"],
        ),
        (
            {"question": QUESTION, "strategy": "expanded", "params": {"reranker": "cohere"}},
            ["body", "params", "reranker"],
        ),
        ({"question": QUESTION, "strategy": "hybrid", "params": {"rrf_k": -1}}, ["body", "params", "rrf_k"]),
        ({"question": QUESTION, "strategy": "hybrid", "params": {"k": -1}}, ["body", "params", "k"]),
        ({"question": QUESTION, "strategy": "expanded", "params": {"reranker": "llm"}}, ["body", "params"]),
        (
            {"question": QUESTION, "strategy": "vector_mmr", "params": {"lambda_mult": "NaN"}},
            ["body", "params", "lambda_mult"],
        ),
        (
            {"question": QUESTION, "strategy": "hybrid", "params": {"alpha": "Infinity"}},
            ["body", "params", "alpha"],
        ),
        (
            {"question": QUESTION, "params": {"max_risk_level": "extreme"}},
            ["body", "context", "max_risk_level"],
        ),
    ],
)
@pytest.mark.parametrize("path", ["/ask", "/retrieve"])
def test_bad_input_names_the_field(base_url: str, path: str, body: dict[str, Any], field: list[str]) -> None:
    status, error = call(base_url, path, body)
    assert status == 422, error
    assert error["detail"][0]["loc"] == field and error["detail"][0]["msg"]


@pytest.mark.parametrize(
    ("option", "value", "allowed"),
    [
        ("show_risky", True, {"allow_show_risky": True}),
        ("max_risk_level", "high", {"max_risk_level": "high"}),
    ],
)
@pytest.mark.parametrize("where", ["params", "context"])
def test_no_client_raises_the_servers_risk_policy(
    engine: QueryEngine, base_url: str, option: str, value: Any, allowed: dict[str, Any], where: str
) -> None:
    body = {"question": QUESTION, "strategy": "naive", where: {option: value}}
    for path in ("/ask", "/retrieve"):
        status, error = call(base_url, path, body)
        assert status == 422, error
        assert error["detail"][0]["loc"] == ["body", "context", option]
        assert "server." in error["detail"][0]["msg"]
    lower = call(base_url, "/retrieve", {"question": QUESTION, where: {"max_risk_level": "low"}})
    assert lower[0] == 200  # asking for less is always allowed
    server = engine.settings.server.model_copy(update=allowed)
    lenient = QueryEngine(
        engine.snapshot, engine.settings.model_copy(update={"server": server}), engine.embedder
    )
    reply = loopback_client(create_app(lenient)).post("/retrieve", json=body)
    assert reply.status_code == 200, reply.text


def test_unknown_strategy_lists_the_known_ones(base_url: str) -> None:
    status, error = call(base_url, "/ask", {"question": QUESTION, "strategy": "nope"})
    assert status == 422 and "naive" in error["detail"][0]["msg"] and "auto" in error["detail"][0]["msg"]


def test_malformed_json_is_a_client_error(base_url: str) -> None:
    status, error = call(base_url, "/ask", raw=b'{"question": ')
    assert status == 422 and error["detail"][0]["type"] == "json_invalid"


def test_strategies_list_their_params(base_url: str, engine: QueryEngine) -> None:
    status, described = call(base_url, "/strategies")
    assert status == 200 and described["default"] == "auto"
    assert described["router"]["router"] == "rule"  # no learned router stored in this home
    params = {s["name"]: s["params"] for s in described["strategies"]}
    assert list(params) == list(engine.strategies)
    assert params["naive"] == {} and set(params["lightrag"]["mode"]["enum"]) == {
        "local",
        "global",
        "naive",
        "hybrid",
        "mix",
    }
    assert {"max_hops", "decay"} <= set(params["graphrag_local"]) and "seed_k" in params["expanded"]
    assert {"fetch_k", "lambda_mult"} <= set(params["vector_mmr"])


def test_openapi_lists_the_paths_and_the_cli_keys(base_url: str) -> None:
    status, schema = call(base_url, "/openapi.json")
    assert status == 200 and schema["openapi"].startswith("3.")
    assert {"/ask", "/retrieve", "/health", "/strategies"} <= set(schema["paths"])
    components = schema["components"]["schemas"]
    assert set(components["QueryAnswer"]["properties"]) == KEYS | {"evidence"}  # when asked
    assert set(components["Context"]["properties"]) == CONTEXT_KEYS
    assert {"question", "strategy", "top_k", "params", "context", *SWITCHES} == set(
        components["QueryRequest"]["properties"]
    )
