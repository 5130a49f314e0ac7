"""GraphRAG's own `graphrag query` on our GraphRAG export, in graphrag's own environment (#32 item 4).

The bundled sample, indexed offline with MiniLM, is exported (`export-graphrag`) into a GraphRAG
project root; `graphrag query --method local|global|basic|drift` then runs on it with its chat and
embedding models pointed at a loopback OpenAI-compatible server (`tests/fakes/openai_server.py`).
The server embeds with our own local embedder, so the query vectors are MiniLM's, of the
export's dimension, and GraphRAG's LanceDB search compares like with like; its chat side answers
every prompt with JSON that carries what each method parses (global's map points, DRIFT's
intermediate answer, score and follow-up queries). Each method must exit 0, print an answer and,
for the methods that search vectors, have asked the server to embed what each searches with.

graphrag 3.3.0 lives in its own venv (its pins conflict with ours: docs/dependencies.md):

    python3 -m venv /tmp/graphrag-venv && /tmp/graphrag-venv/bin/pip install graphrag==3.3.0

`GRAPHRAG_PYTHON` names another interpreter. Where neither exists (as in CI) the test skips,
saying how to make the venv.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from graphunified_assets.ops.graphrag_io import export_graphrag
from graphunified_query.core.providers.embedding import make_embedder
from graphunified_query.core.settings.model import load_settings
from tests.fakes.openai_server import FakeOpenAIServer, Reply, text

GRAPHRAG_PYTHON = Path(os.environ.get("GRAPHRAG_PYTHON", "/tmp/graphrag-venv/bin/python"))
GRAPHRAG = GRAPHRAG_PYTHON.parent / "graphrag"
QUESTION = "Who founded the Hale Mill?"
METHODS = ("local", "global", "basic", "drift")
# One reply for every prompt, with what each method reads out of it (they parse JSON leniently).
ANSWER = {
    "points": [{"description": "Thomas Hale founded the Hale Mill [Data: Reports (0)]", "score": 80}],
    "intermediate_answer": "Thomas Hale founded the Hale Mill.",
    "response": "Thomas Hale founded the Hale Mill.",
    "score": 80,
    "follow_up_queries": ["When was the Hale Mill founded?"],
}


def settings_yaml(base_url: str) -> str:
    """GraphRAG's settings: both models at the loopback server, the export's LanceDB tables."""
    model = "    model_provider: openai\n    api_base: {url}\n    api_key: loopback\n    model: {name}\n"
    return (
        "completion_models:\n  default_completion_model:\n"
        + model.format(url=base_url, name="gpt-4o-mini")
        + "embedding_models:\n  default_embedding_model:\n"
        + model.format(url=base_url, name="text-embedding-3-small")
        + "vector_store:\n  type: lancedb\n  db_uri: output/lancedb\n"
        + "output_storage:\n  type: file\n  base_dir: output\n"
    )


@pytest.fixture(scope="module")
def project(sample_home: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A GraphRAG project root whose output/ is our export of the sample home."""
    if not GRAPHRAG.exists():
        pytest.skip(
            f"graphrag is not installed at {GRAPHRAG} (python3 -m venv /tmp/graphrag-venv && "
            "/tmp/graphrag-venv/bin/pip install graphrag==3.3.0; or set GRAPHRAG_PYTHON)"
        )
    root = tmp_path_factory.mktemp("graphrag-project")
    init = subprocess.run(
        [str(GRAPHRAG), "init", "--root", str(root), "--force"],
        capture_output=True,
        text=True,
        timeout=300,
        input="\n\n",
    )
    assert init.returncode == 0, init.stderr[-3000:]
    export_graphrag(sample_home, root / "output")
    return root


@pytest.fixture(scope="module")
def server(sample_home: Path) -> Iterator[FakeOpenAIServer]:
    embedder = make_embedder(load_settings(sample_home).embedding, environ={})

    def embed(texts: list[str]) -> list[list[float]]:
        return [[float(x) for x in row] for row in embedder.embed(texts)]

    def answer(body: dict[str, Any]) -> Reply:
        # A structured-output request (DRIFT's primer) gets exactly its schema's properties.
        schema = (body.get("response_format") or {}).get("json_schema", {}).get("schema", {})
        wanted = schema.get("properties") or ANSWER
        return text(json.dumps({key: ANSWER[key] for key in wanted}))

    with FakeOpenAIServer(answer, embed=embed) as fake:
        yield fake


def run_query(project: Path, server: FakeOpenAIServer, method: str) -> subprocess.CompletedProcess[str]:
    (project / "settings.yaml").write_text(settings_yaml(server.base_url), encoding="utf-8")
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI", "GRAPHRAG"))}
    return subprocess.run(
        [str(GRAPHRAG), "query", "--root", str(project), "--method", method, QUESTION],
        capture_output=True,
        text=True,
        timeout=600,
        env=environ | {"GRAPHRAG_API_KEY": "loopback"},
    )


@pytest.mark.slow
@pytest.mark.parametrize("method", METHODS)
def test_graphrag_queries_our_export(project: Path, server: FakeOpenAIServer, method: str) -> None:
    embedded_before = sum(1 for _, body in server.requests if "input" in body)
    done = run_query(project, server, method)
    assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-4000:])
    assert "Thomas Hale founded the Hale Mill" in done.stdout, done.stdout[-2000:]
    embedded = [body["input"] for _, body in server.requests if "input" in body][embedded_before:]
    if method in ("local", "basic"):  # they search our vectors with the question's
        assert any(QUESTION in json.dumps(texts) for texts in embedded), embedded[:3]
    elif method == "drift":  # it searches with a hypothetical answer, then with its follow-ups
        assert ANSWER["follow_up_queries"] in embedded, embedded[:3]
    else:  # global reads the reports, no vector
        assert embedded == []
