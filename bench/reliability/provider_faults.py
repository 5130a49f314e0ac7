"""Provider fault matrix: each fault kind, at the fake Anthropic or Voyage server, fails one
document for good during `index`; the fault clears and `index` runs again.

`run(workdir)` returns one row per fault kind and layer:
- ``injected``: requests that met the fault;
- ``recovered``: after the resume, no failure row left and every table equal to a clean run's;
- ``rows_lost``: rows of the clean run's tables missing after the resume (must be 0);
- ``repeated_llm_calls_after_resume``: resumed Claude requests identical to one already answered
  cleanly (must be 0: those come from the LLM cache);
- ``seconds``: both `index` runs.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from graphunified_assets.defs.resources import GraphUnifiedResource
from graphunified_assets.lib.ingest.index_state import IndexState
from graphunified_assets.ops.indexing import index
from graphunified_query.core.layout import HomeLayout
from graphunified_query.core.providers.llm_cache import request_key
from tests.fakes.anthropic_server import FakeAnthropicServer
from tests.fakes.fault_corpus import (
    is_failing_embedding,
    is_failing_extraction,
    respond,
    settings_yaml,
    write_corpus,
)
from tests.fakes.voyage_server import FakeVoyageServer

KEY = "bench-key"
TIMEOUT = 0.5  # the clients' timeout in these homes; a "timeout" fault stalls three times longer
STATUS_FAULTS = {"429": 429, "500": 500, "529": 529}
WIRE_FAULTS = ("reset", "timeout", "truncated", "malformed_json")
MATRIX: list[tuple[str, str]] = [
    *[("anthropic", f) for f in (*STATUS_FAULTS, *WIRE_FAULTS, "malformed_tool_input", "empty_completion")],
    *[("voyage", f) for f in (*STATUS_FAULTS, *WIRE_FAULTS, "empty_completion")],
]
# Per-document tables compared whole; global ones by their rows.
PER_DOCUMENT = ("chunks", "chunk_embeddings", "extractions")
GLOBAL = ("entities", "relationships", "facts")


def run(workdir: Path, matrix: list[tuple[str, str]] | None = None) -> list[dict[str, Any]]:
    workdir.mkdir(parents=True, exist_ok=True)
    rows = []
    with FakeAnthropicServer(respond, api_key=KEY) as claude, FakeVoyageServer(api_key=KEY) as voyage:
        reference = _snapshot(_index(_home(workdir / "clean", claude, voyage), workdir / "input-clean"))
        for layer, fault in matrix or MATRIX:
            rows.append(_scenario(workdir / f"{layer}-{fault}", layer, fault, claude, voyage, reference))
    return rows


def _scenario(
    folder: Path,
    layer: str,
    fault: str,
    claude: FakeAnthropicServer,
    voyage: FakeVoyageServer,
    reference: dict[str, list[str]],
) -> dict[str, Any]:
    server: FakeAnthropicServer | FakeVoyageServer = claude if layer == "anthropic" else voyage
    predicate = is_failing_extraction if layer == "anthropic" else is_failing_embedding
    status = STATUS_FAULTS.get(fault, 0)
    server.fail_matching(
        predicate,  # type: ignore[arg-type]
        status=status,
        kind=None if status else fault,  # type: ignore[arg-type]
        retry_after="0" if status == 429 else None,
    )
    started = time.perf_counter()
    claude_before, voyage_before = len(claude.requests), len(voyage.requests)
    home = _home(folder, claude, voyage)
    try:
        _index(home, folder / "input")
    finally:
        server.clear_faults()
    outcomes = claude.outcomes if layer == "anthropic" else voyage.outcomes
    first = len(claude.requests) if layer == "anthropic" else len(voyage.requests)
    before = claude_before if layer == "anthropic" else voyage_before
    injected = sum(1 for i in range(before, first) if outcomes.get(i) != "ok")
    answered = {
        request_key(body)
        for i, body in enumerate(claude.bodies)
        if claude_before <= i and claude.outcomes.get(i) == "ok"
    }
    resume_from = len(claude.requests)
    layout = _index(home, folder / "input")
    repeated = sum(1 for body in claude.bodies[resume_from:] if request_key(body) in answered)
    after = _snapshot(layout)
    lost = sum(len(set(reference[t]) - set(after.get(t, []))) for t in reference)
    failures = [f for f in IndexState(layout.index_state).failures() if f.stage in ("extract", "embed")]
    return {
        "fault": fault,
        "layer": layer,
        "injected": injected,
        "recovered": not failures and after == reference,
        "rows_lost": lost,
        "repeated_llm_calls_after_resume": repeated,
        "seconds": round(time.perf_counter() - started, 2),
    }


def _home(folder: Path, claude: FakeAnthropicServer, voyage: FakeVoyageServer) -> Path:
    home = folder / "home"
    home.mkdir(parents=True)
    (home / "settings.yaml").write_text(settings_yaml(claude.base_url, voyage.base_url, timeout=TIMEOUT))
    return home


def _index(home: Path, input_dir: Path) -> HomeLayout:
    if not input_dir.exists():
        write_corpus(input_dir)
    resource = GraphUnifiedResource(
        home=str(home), input_dir=str(input_dir), voyage_api_key=KEY, anthropic_api_key=KEY
    )
    index(resource, echo=lambda _: None)
    return HomeLayout.at(home)


def _snapshot(layout: HomeLayout) -> dict[str, list[str]]:
    """Every table's rows as canonical JSON, sorted (volatile columns left out)."""
    tables: dict[str, list[str]] = {}
    for name in PER_DOCUMENT:
        paths = sorted(layout.partition_dir(name).glob("*.parquet"))
        rows = [row for path in paths for row in pq.read_table(path).to_pylist()]
        tables[name] = _canonical(rows)
    for name in GLOBAL:
        path = layout.table_path(name)
        tables[name] = _canonical(pq.read_table(path).to_pylist() if path.exists() else [])
    return tables


def _canonical(rows: list[dict[str, Any]]) -> list[str]:
    volatile = {"indexed_at"}  # when a row was written
    return sorted(
        json.dumps({k: v for k, v in row.items() if k not in volatile}, sort_keys=True, default=str)
        for row in rows
    )
