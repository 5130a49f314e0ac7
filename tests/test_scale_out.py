"""Scale-out: every example deployment config validates, and the multiprocess executor runs the
sample corpus with the model pools holding their limits."""

from __future__ import annotations

import importlib
import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
import yaml
from dagster._config import validate_config
from dagster._core.events import DagsterEventType
from dagster._core.instance.config import dagster_instance_config

from graphunified_assets.defs import executors
from graphunified_assets.defs.build import build_definitions
from graphunified_assets.defs.executors import (
    BROKER_ENV,
    EXECUTOR_ENV,
    MODELS_POOL,
    executor_from_env,
    model_steps_side_by_side,
)
from graphunified_assets.defs.jobs import INDEX_DOCUMENTS, REFRESH_INDEXES
from graphunified_assets.defs.resources import HOME_ENV, INPUT_ENV, GraphUnifiedResource, default_resource
from graphunified_assets.defs.sensors import partition_range_tags
from graphunified_assets.ops.worker import WORKER_CONCURRENCY_ENV
from graphunified_query.core.settings import embedding as embedding_settings
from graphunified_query.core.settings.embedding import EmbeddingSettings
from graphunified_query.core.settings.model import ExtractionSettings
from tests.conftest import SAMPLE_DOCS

DEPLOY = Path(__file__).resolve().parent.parent / "deploy"
# The extras an executor needs; without them its test is skipped, naming what to install.
EXTRAS = {"multiprocess": None, "k8s": "dagster_k8s", "celery": "dagster_celery"}


def _load(path: Path) -> dict[str, Any]:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def _requires(executor: str) -> None:
    module = EXTRAS[executor]
    if module is not None:
        pytest.importorskip(module, reason=f"pip install 'graph-unified[{executor}]' to validate it")


def _job(executor: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str) -> dg.JobDefinition:
    monkeypatch.setenv(EXECUTOR_ENV, executor)
    defs = build_definitions(GraphUnifiedResource(home=str(tmp_path), input_dir=str(tmp_path)))
    return defs.resolve_job_def(name)


@pytest.mark.parametrize("executor", sorted(EXTRAS.keys() - {"celery"}))  # celery's is the environment's
def test_example_run_configs_validate_against_their_executor(
    executor: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _requires(executor)
    config = _load(DEPLOY / executor / "run_config.yaml")
    for job in (INDEX_DOCUMENTS, REFRESH_INDEXES):
        dg.validate_run_config(_job(executor, tmp_path, monkeypatch, job), config)
    # The validation has teeth: a misspelt executor setting is refused.
    broken = {**config, "execution": {"config": {**config["execution"]["config"], "max_concurent": 2}}}
    with pytest.raises(dg.DagsterInvalidConfigError):
        dg.validate_run_config(_job(executor, tmp_path, monkeypatch, REFRESH_INDEXES), broken)


@pytest.mark.parametrize("deployment", ["k8s", "celery"])
def test_example_instance_configs_validate_and_load_their_classes_and_driver(deployment: str) -> None:
    _requires(deployment)
    config, _ = dagster_instance_config(str(DEPLOY / deployment))  # Dagster's instance schema
    launcher = config.get("run_launcher")
    if launcher is not None:
        cls = getattr(importlib.import_module(launcher["module"]), launcher["class"])
        result = validate_config(cls.config_type(), launcher["config"])
        assert result.success, [e.message for e in result.errors or []]
    # What the instance would load: every class it names (the extra brings them), and SQLAlchemy's
    # dialect with the driver the URL names (a fresh install lacked both: `No module named 'psycopg'`).
    import sqlalchemy
    from dagster_postgres.utils import pg_url_from_config

    named = [v for v in config.values() if isinstance(v, dict) and "module" in v and "class" in v]
    for entry in named:
        cls = getattr(importlib.import_module(entry["module"]), entry["class"])
        assert validate_config(cls.config_type(), entry.get("config", {})).success, entry["class"]
    assert {e["class"] for e in named} >= {"PostgresRunStorage", "PooledPostgresEventLogStorage"}
    postgres_db = {**config["run_storage"]["config"]["postgres_db"], "password": "unused"}
    # create_engine loads the dialect and its driver, and connects to nothing.
    engine = sqlalchemy.create_engine(pg_url_from_config({"postgres_db": postgres_db}))
    assert engine.dialect.driver == "psycopg2"


def test_celery_runs_reach_the_environments_broker_on_every_launch_path() -> None:
    pytest.importorskip("dagster_celery", reason="pip install 'graph-unified[celery]' to validate it")
    broker = "redis://broker.example:6379/0"
    executor = executor_from_env({EXECUTOR_ENV: "celery", BROKER_ENV: broker})
    # The executor's default config, which UI, sensor, schedule and automation runs use unchanged.
    assert executor.config_schema.default_value["broker"] == broker
    assert executor.config_schema.default_value["config_source"]["task_acks_late"] is True
    with pytest.raises(ValueError, match=f"{EXECUTOR_ENV}=celery needs {BROKER_ENV}"):
        executor_from_env({EXECUTOR_ENV: "celery"})


def test_unknown_or_missing_executor_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="GRAPHUNIFIED_EXECUTOR='ray' is not an executor"):
        executor_from_env({EXECUTOR_ENV: "ray"})
    # UI, sensor, schedule and automation runs execute like `index`: in the run's own process.
    assert executor_from_env({}).name == dg.in_process_executor.name


def test_multiprocess_executor_forks_from_a_preloaded_server_by_default() -> None:
    # The default config, not a run config the UI never passes, selects forkserver + preloading.
    executor = executor_from_env({EXECUTOR_ENV: "multiprocess"})
    start = executor.config_schema.default_value["multiprocess"]["start_method"]
    assert start == {"forkserver": {"preload_modules": ["graphunified_assets.definitions"]}}


def _index_documents_job() -> dg.JobDefinition:
    return build_definitions(default_resource()).resolve_job_def(INDEX_DOCUMENTS)


def _refresh_indexes_job() -> dg.JobDefinition:
    return build_definitions(default_resource()).resolve_job_def(REFRESH_INDEXES)


def _pool_intervals(instance: dg.DagsterInstance, run_id: str, pools: dict[str, str]) -> dict[str, list]:
    """(start, end) of every step per pool, from the run's step events."""
    times: dict[str, dict[str, float]] = {}
    for event_type in (DagsterEventType.STEP_START, DagsterEventType.STEP_SUCCESS):
        for record in instance.get_records_for_run(run_id, of_type=event_type).records:
            entry = record.event_log_entry
            times.setdefault(entry.step_key or "", {})[event_type.name] = entry.timestamp
    intervals: dict[str, list] = {}
    for step, seen in times.items():
        op = step.split(".")[-1].split("[")[0]  # `<graph asset>.<op>[<mapping key>]` for shards
        if op in pools:
            intervals.setdefault(pools[op], []).append((seen["STEP_START"], seen["STEP_SUCCESS"]))
    return intervals


@pytest.mark.slow
def test_multiprocess_executor_runs_the_corpus_within_pool_limits(
    input_dir: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Step processes rebuild the code location from the environment, as under `dagster dev`.
    monkeypatch.setenv(HOME_ENV, str(home))
    monkeypatch.setenv(INPUT_ENV, str(input_dir))
    monkeypatch.setenv(EXECUTOR_ENV, "multiprocess")
    run_config = _load(DEPLOY / "multiprocess" / "run_config.yaml")
    keys = sorted(SAMPLE_DOCS)
    with dg.instance_for_test() as instance:
        for pool in ("llm", "models"):
            instance.event_log_storage.set_concurrency_slots(pool, 1)
        instance.add_dynamic_partitions("documents", keys)
        # Per-document steps are one chain; the global stage is where steps fan out in parallel.
        indexed = _index_documents_job().execute_in_process(
            instance=instance, tags=partition_range_tags(keys[0], keys[-1])
        )
        assert indexed.success
        with dg.execute_job(
            dg.reconstructable(_refresh_indexes_job), instance=instance, run_config=run_config
        ) as result:
            assert result.success, [e.message for e in result.all_events if e.is_failure]
            runs = [result.run_id]
        # Steps ran in their own processes...
        engine = [r.event_log_entry for r in instance.get_records_for_run(runs[0]).records]
        assert any("Executing steps using multiprocess executor" in (e.user_message or "") for e in engine)
        # ...and no two steps of one pool ever overlapped (one slot each).
        # Each op's pool, by op name (a sharded asset's shard steps share their op's).
        ops = _refresh_indexes_job().graph.iterate_op_defs()
        step_pools = {op.name: op.pool for op in ops if op.pool}
        refresh_spans = _pool_intervals(instance, runs[0], step_pools)
        assert (
            len(refresh_spans["models"]) >= 4 and len(refresh_spans["llm"]) >= 2
        )  # graph, vector shards (a table each at least); resolution, reports
        for run_id in runs:
            for pool, spans in _pool_intervals(instance, run_id, step_pools).items():
                spans.sort()
                overlaps = [(a, b) for a, b in itertools.pairwise(spans) if b[0] < a[1]]
                assert not overlaps, f"{pool} steps overlapped in run {run_id}"
        assert (home / "lancedb" / "chunk_vectors.lance").exists()


@pytest.fixture(scope="module")
def instance() -> Iterator[dg.DagsterInstance]:
    with dg.instance_for_test() as instance:  # one for the cases below: each costs seconds
        yield instance


@pytest.mark.parametrize(
    ("executor", "execution", "pool", "worker", "side_by_side"),
    [
        ("in_process", {}, 2, None, 1),  # one step at a time
        ("multiprocess", {}, 1, None, 1),  # the default config: max_concurrent = cores, pool 1
        ("multiprocess", {"multiprocess": {"max_concurrent": 2}}, 2, None, 2),
        ("multiprocess", {"multiprocess": {"max_concurrent": 4}}, 3, None, 3),  # the pool bounds it
        ("multiprocess", {"in_process": {}}, 2, None, 1),  # a run config choosing in process
        ("k8s", {}, 2, None, 1),  # a pod per step
        ("celery", {}, 2, "3", 3),  # the worker's --concurrency
        ("celery", {}, 2, None, 1),
    ],
)
def test_model_threads_are_the_cores_shared_by_the_model_steps_side_by_side(
    executor: str,
    execution: dict[str, Any],
    pool: int,
    worker: str | None,
    side_by_side: int,
    instance: dg.DagsterInstance,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    environ = {EXECUTOR_ENV: executor, **({WORKER_CONCURRENCY_ENV: worker} if worker else {})}
    monkeypatch.setattr(embedding_settings, "usable_cores", lambda: 12)
    monkeypatch.setattr(executors, "usable_cores", lambda: 12)
    instance.event_log_storage.set_concurrency_slots(MODELS_POOL, pool)
    found = model_steps_side_by_side({"execution": {"config": execution}}, instance, environ)
    assert found == side_by_side
    assert EmbeddingSettings().threads(found) == 12 // side_by_side
    assert EmbeddingSettings(local_threads=5).threads(found) == 5  # set: as set
    assert ExtractionSettings().processes(found) == 12 // side_by_side
    assert ExtractionSettings(parse_processes=5).processes(found) == 5
    monkeypatch.setattr(embedding_settings, "usable_cores", lambda: 2)
    assert EmbeddingSettings().threads(3) == 1  # never none


def test_a_step_builds_its_model_with_its_share_of_the_cores(
    home: Path, instance: dg.DagsterInstance, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(embedding_settings, "usable_cores", lambda: 8)
    monkeypatch.setenv(EXECUTOR_ENV, "multiprocess")
    resource = GraphUnifiedResource(home=str(home), input_dir=str(home))
    instance.event_log_storage.set_concurrency_slots(MODELS_POOL, 4)
    run = instance.create_run_for_job(
        dg.GraphDefinition("noop").to_job(),
        run_config={"execution": {"config": {"multiprocess": {"max_concurrent": 4}}}},
    )
    context = dg.build_init_resource_context(instance=instance)
    monkeypatch.setattr(type(context), "dagster_run", run, raising=False)
    resource.setup_for_execution(context)
    assert resource.embedder().provider.threads == 2  # type: ignore[attr-defined]
    assert resource.parse_processes() == 2
    assert resource.extractor().inner.processes == 2  # type: ignore[attr-defined]
    monkeypatch.delenv(EXECUTOR_ENV)  # in process: the whole machine
    resource.setup_for_execution(context)
    assert resource.embedder().provider.threads == 8  # type: ignore[attr-defined]
    assert resource.extractor().inner.processes == 8  # type: ignore[attr-defined]
