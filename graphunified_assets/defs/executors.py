"""Which Dagster executor runs the steps: chosen per deployment, the code stays the same.

Runs launched from the UI, the sensors, the schedule and declarative automation execute like
`index` does: ``GRAPHUNIFIED_EXECUTOR`` = ``in_process`` (the default: every step in the run's
process, which loaded the code location once — a step process per step re-imported it and made
these runs ~10x slower than the CLI), ``multiprocess`` (parallel step processes forked from a
server that preloaded the code location: `start_method: forkserver` is the default config, not
only in a run config the UI never uses), ``k8s`` (one Kubernetes job per step;
`pip install 'graph-unified[k8s]'`) or ``celery`` (steps queued to Celery workers;
`pip install 'graph-unified[celery]'`). The Celery executor's broker and settings come from the
environment of the process that loads the code location (`CELERY_BROKER_URL`, see
graphunified_assets/ops/worker.py), so CLI, UI, sensor, schedule and automation runs all reach the
same broker; each home's steps go to that home's own queue (`celery_queue`), which only workers
started for that home listen on. Every executor first tags a run launched without its home (the
UI's "Materialize", asset backfills) with the code location's (`stamp_home`). Run configs
(deploy/*/run_config.yaml) may still tune an executor; provider limits across runs stay with the
instance's pools (`llm`, `models`), which every executor honours.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from typing import Any

import dagster as dg

from graphunified_assets.lib.freed_memory import release_freed_memory
from graphunified_assets.ops.run_home import HOME_TAG, celery_queue, stamp_home
from graphunified_assets.ops.worker import (
    BACKEND_ENV,
    BROKER_ENV,
    EXECUTOR_ENV,
    HOME_ENV,
    WORKER_CONCURRENCY_ENV,
)
from graphunified_query.core.layout import HomeLayout
from graphunified_query.core.settings.embedding import usable_cores

CHOICES = ("in_process", "multiprocess", "k8s", "celery")
DEFAULT = "in_process"
# Step processes fork from one server that imported the pipeline once (milliseconds per step)
# instead of each starting Python and re-importing Dagster, models and the code location (seconds).
PRELOADED = "graphunified_assets.definitions"
FORKSERVER = {"multiprocess": {"start_method": {"forkserver": {"preload_modules": [PRELOADED]}}}}
MODELS_POOL = "models"  # the instance's pool of the steps that run a model (embedding)


def _forked_multiprocess() -> dg.ExecutorDefinition:
    """Dagster's multi_or_in_process executor with forkserver + preloaded modules as its default."""
    base = dg.multi_or_in_process_executor
    return dg.ExecutorDefinition(
        name=base.name,
        config_schema=dg.Field(base.config_schema.config_type, default_value=FORKSERVER),
        requirements=base._requirements_fn,
        executor_creation_fn=base.executor_creation_fn,
        description="Steps in parallel processes forked from a server that preloaded the code location.",
    )


def executor_from_env(
    environ: Mapping[str, str] | None = None, home: HomeLayout | None = None
) -> dg.ExecutorDefinition:
    """The executor named by GRAPHUNIFIED_EXECUTOR, tagging each run it executes with ``home`` (the
    code location's; the environment's by default); a clear error for unknown or uninstalled ones."""
    environ = environ if environ is not None else dict(os.environ)
    home = home or HomeLayout.at(environ.get(HOME_ENV, "data"))
    return _stamping(_named_executor(environ, home), home)


def runs_in_process(environ: Mapping[str, str] | None = None) -> bool:
    """Whether GRAPHUNIFIED_EXECUTOR keeps every step in the run's own process."""
    return (environ if environ is not None else os.environ).get(EXECUTOR_ENV, DEFAULT) == "in_process"


def model_steps_side_by_side(
    run_config: Mapping[str, Any], instance: dg.DagsterInstance | None, environ: Mapping[str, str]
) -> int:
    """How many model steps of a run may compute at once on one machine, so each process's model
    takes its share of the cores (`EmbeddingSettings.threads`): one in process (a step at a time)
    and on Kubernetes (a pod per step); a Celery worker's own --concurrency (`start_worker`); the
    multiprocess executor's ``max_concurrent`` (default: the cores) within the `models` pool."""
    name = environ.get(EXECUTOR_ENV, DEFAULT)
    execution = (run_config.get("execution") or {}).get("config") or {}
    if name == "celery":
        return int(environ.get(WORKER_CONCURRENCY_ENV) or 1)
    if name != "multiprocess" or "in_process" in execution:
        return 1
    steps = int((execution.get("multiprocess") or {}).get("max_concurrent") or usable_cores())
    limit = instance.event_log_storage.get_concurrency_info(MODELS_POOL).limit if instance else None
    return max(1, min(steps, limit) if limit else steps)


def _named_executor(environ: Mapping[str, str], home: HomeLayout) -> dg.ExecutorDefinition:
    name = environ.get(EXECUTOR_ENV, DEFAULT)
    if name == "in_process":
        return dg.in_process_executor
    if name == "multiprocess":
        return _forked_multiprocess()
    if name == "k8s":
        try:
            from dagster_k8s import k8s_job_executor
        except ImportError:
            raise _missing("k8s", "dagster-k8s") from None
        return k8s_job_executor
    if name == "celery":
        try:
            import dagster_celery  # noqa: F401
        except ImportError:
            raise _missing("celery", "dagster-celery") from None
        return _celery_per_home(environ, home)
    raise ValueError(f"{EXECUTOR_ENV}={name!r} is not an executor; use one of {', '.join(CHOICES)}.")


class _HomeStamped(dg.Executor):
    """``inner``, after tagging a run launched without its home (the UI's Materialize, a backfill)
    with the code location's: before any step starts, so steps elsewhere read it from the run.
    When ``inner`` runs the steps in this process, the memory each step freed is given back to the
    system as it ends (`lib/freed_memory.py`), so a step's peak does not sit on earlier steps'."""

    def __init__(self, inner: dg.Executor, home: HomeLayout, *, steps_here: bool = False) -> None:
        self.inner = inner
        self.home = home
        self.steps_here = steps_here

    def execute(self, plan_context: Any, execution_plan: Any) -> Any:
        stamp_home(plan_context.instance, plan_context.dagster_run, self.home)
        events = self.inner.execute(plan_context, execution_plan)
        return _releasing_after_steps(events) if self.steps_here else events

    @property
    def retries(self) -> Any:
        return self.inner.retries

    @property
    def step_dependency_config(self) -> Any:
        return self.inner.step_dependency_config

    def get_step_event_or_retry_event(self, *args: Any, **kwargs: Any) -> Any:
        return self.inner.get_step_event_or_retry_event(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        # The rest is the inner executor's own: dagster-celery's loop reads `app_args()` off it.
        if name == "inner":  # not set yet (a copy being built): no endless recursion
            raise AttributeError(name)
        return getattr(self.inner, name)


def _releasing_after_steps(events: Iterator[Any]) -> Iterator[Any]:
    for event in events:
        yield event
        if event.is_step_success or event.is_step_failure:
            release_freed_memory()


@dg.success_hook
def _released_after_success(_: dg.HookContext) -> None:
    release_freed_memory()


@dg.failure_hook
def _released_after_failure(_: dg.HookContext) -> None:
    release_freed_memory()


# What `_HomeStamped` does after each step, for a job run by ``execute_in_process`` (`index` with
# the in-process executor), which replaces the job's executor with its own.
RELEASE_AFTER_STEPS = {_released_after_success, _released_after_failure}


def _stamping(base: dg.ExecutorDefinition, home: HomeLayout) -> dg.ExecutorDefinition:
    """``base`` with the same name and config, its executors wrapped in `_HomeStamped`."""
    steps_here = base.name == dg.in_process_executor.name

    def create(init_context: dg.InitExecutorContext) -> dg.Executor:
        inner = base.executor_creation_fn(init_context)  # type: ignore[misc]
        return _HomeStamped(inner, home, steps_here=steps_here)

    return dg.ExecutorDefinition(
        name=base.name,
        config_schema=base.config_schema.as_field(),  # with its defaults (the broker, forkserver)
        requirements=base._requirements_fn,
        executor_creation_fn=create,
        description=base.description,
    )


def _missing(extra: str, package: str) -> ImportError:
    return ImportError(
        f"{EXECUTOR_ENV}={extra} needs {package}: pip install 'graph-unified[{extra}]' "
        "(into the image or environment that loads the code location)."
    )


# Long steps, one at a time per worker slot; a step whose process is killed (OOM, `kill -9`) is
# handed to another worker instead of being lost with its run waiting for ever.
CELERY_SETTINGS = {
    "worker_prefetch_multiplier": 1,
    "task_acks_late": True,
    "task_reject_on_worker_lost": True,
}


def celery_config(environ: Mapping[str, str]) -> dict[str, Any]:
    """The Celery executor's config from the environment: the one place every launch path and
    every worker (graphunified_assets/ops/worker.py) reads the broker from."""
    broker = environ.get(BROKER_ENV, "").strip()
    if not broker:
        raise ValueError(
            f"{EXECUTOR_ENV}=celery needs {BROKER_ENV} (e.g. redis://broker:6379/0) in the environment of "
            "the webserver, the daemon, `index` and every worker"
        )
    backend = environ.get(BACKEND_ENV, "").strip() or (broker if broker.startswith("redis") else "rpc://")
    return {"broker": broker, "backend": backend, "config_source": dict(CELERY_SETTINGS)}


def _celery_per_home(environ: Mapping[str, str], home: HomeLayout) -> dg.ExecutorDefinition:
    """dagster-celery's executor with the environment's broker as its default config, sending each
    run's steps to the queue of the run's home."""
    from dagster._core.execution.retries import RetryMode
    from dagster_celery import celery_executor
    from dagster_celery.defaults import task_default_queue
    from dagster_celery.executor import CeleryExecutor

    class HomeQueueExecutor(CeleryExecutor):
        def execute(self, plan_context: Any, execution_plan: Any) -> Any:
            if self.config_source.task_default_queue == task_default_queue:  # not set by a run config
                tagged = plan_context.dagster_run.tags.get(HOME_TAG, str(home.home))  # as stamped
                self.config_source.task_default_queue = celery_queue(tagged)
            return super().execute(plan_context, execution_plan)

    def create(init_context: dg.InitExecutorContext) -> dg.Executor:
        config = init_context.executor_config
        return HomeQueueExecutor(
            retries=RetryMode.from_config(config["retries"]),  # type: ignore[arg-type]
            broker=config.get("broker"),
            backend=config.get("backend"),
            config_source=config.get("config_source"),
            include=config.get("include"),
        )

    return dg.ExecutorDefinition(
        name=celery_executor.name,
        config_schema=dg.Field(
            celery_executor.config_schema.config_type, default_value=celery_config(environ)
        ),
        requirements=celery_executor._requirements_fn,
        executor_creation_fn=create,
        description="Steps queued to Celery workers: the broker from CELERY_BROKER_URL, one queue per home.",
    )
