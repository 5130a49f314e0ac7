"""`logging.format: json`: the pipeline's logs are one JSON object per line, with no key in them."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from graphunified_assets.ops.logs import JsonFormatter

ROOT = Path(__file__).resolve().parent.parent

# What the sensor and daemon do, in one process: request runs for the new documents and run them
# with the run config the requests carry.
SENSOR_RUNS = textwrap.dedent(
    """
    import contextlib, io, sys, warnings
    import dagster as dg
    warnings.filterwarnings("ignore", category=dg.BetaWarning)
    from graphunified_assets.defs.build import build_definitions
    from graphunified_assets.defs.resources import GraphUnifiedResource
    from graphunified_assets.defs.sensors import new_documents_sensor

    resource = GraphUnifiedResource(home=sys.argv[1], input_dir=sys.argv[2])
    defs = build_definitions(resource)
    with dg.instance_for_test() as instance:
        with contextlib.redirect_stderr(io.StringIO()):  # the sensor's own log is the daemon's
            tick = new_documents_sensor(
                dg.build_sensor_context(instance=instance, resources={"graphunified": resource})
            )
        instance.add_dynamic_partitions("documents", list(tick.dynamic_partitions_requests[0].partition_keys))
        for request in tick.run_requests:
            job = defs.resolve_job_def(request.job_name)
            job.execute_in_process(instance=instance, tags=request.tags, run_config=request.run_config)
    """
)


def _json_home(tmp_path: Path, level: str = "INFO") -> Path:
    home = tmp_path / "json-home"
    home.mkdir()
    (home / "settings.yaml").write_text(f"logging:\n  format: json\n  level: {level}\n")
    return home


def _run(args: list[str], secret: str) -> list[dict[str, Any]]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and k != "DAGSTER_HOME"}
    env["OPENAI_API_KEY"] = secret  # set but unused offline: it must never be printed
    # LanceDB's Rust core logs to stderr on its own, configured once at import: README says to
    # set this with logging.format json.
    env["LANCEDB_LOG"] = "error"
    done = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert secret not in done.stdout + done.stderr
    records = []
    for line in (done.stdout + done.stderr).splitlines():
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            pytest.fail(f"not a JSON log line: {line[:300]}")
    assert all({"time", "level", "logger", "message"} <= set(r) for r in records)
    return records


@pytest.mark.slow
def test_sensor_launched_runs_log_one_json_object_per_line(input_dir: Path, tmp_path: Path) -> None:
    home = _json_home(tmp_path, level="DEBUG")  # Dagster's run events are DEBUG records
    records = _run([sys.executable, "-c", SENSOR_RUNS, str(home), str(input_dir)], "sk-unused-secret-42")
    runs = [r for r in records if r.get("run_id")]
    assert {r["job"] for r in runs} == {"index_documents"}
    events = {r.get("event") for r in runs}
    assert {"RUN_START", "STEP_START", "ASSET_MATERIALIZATION", "STEP_SUCCESS", "RUN_SUCCESS"} <= events
    # context.log messages of the assets keep their own text and name their step.
    assert any(r.get("step") == "chunk_embeddings" and r["message"].startswith("embedded 3/3") for r in runs)


def test_formatter_masks_api_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-secret-value-123")
    record = logging.LogRecord("x", logging.ERROR, __file__, 1, "bad key sk-ant-secret-value-123", (), None)
    line = JsonFormatter().format(record)
    assert "secret-value" not in line
    assert json.loads(line)["message"] == "bad key <ANTHROPIC_API_KEY>"


@pytest.mark.slow
def test_index_command_logs_one_json_object_per_line(input_dir: Path, tmp_path: Path) -> None:
    home = _json_home(tmp_path)
    args = [
        sys.executable,
        "-m",
        "graphunified_assets",
        "index",
        "--input",
        str(input_dir),
        "--home",
        str(home),
    ]
    records = _run(args, "sk-unused-secret-43")
    runs = [r for r in records if r.get("run_id")]
    assert {r["job"] for r in runs} == {"index_documents", "refresh_indexes"}
    assert any(r.get("step") == "chunk_embeddings" for r in runs)
    assert any("done in" in r["message"] for r in records if not r.get("run_id"))
