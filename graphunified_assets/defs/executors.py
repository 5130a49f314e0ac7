"""Which Dagster executor runs the steps: chosen per deployment, the code stays the same.

Runs launched from the UI, the sensors, the schedule and declarative automation execute like
`index` does: ``GRAPHUNIFIED_EXECUTOR`` = ``in_process`` (the default: every step in the run's
process, which loaded the code location once — a step process per step re-imported it and made
these runs ~10x slower than the CLI), ``multiprocess`` (parallel step processes forked from a
server that preloaded the code location: `start_method: forkserver` is the default config, not
only in a run config the UI never uses), ``k8s`` (one Kubernetes job per step;
`pip install 'graph-unified[k8s]'`) or ``celery`` (steps queued to Celery workers;
`pip install 'graph-unified[celery]'`). Run configs (deploy/*/run_config.yaml) may still tune the
executor; provider limits across runs stay with the instance's pools (`llm`, `models`), which
every executor honours.
"""

from __future__ import annotations

import os

import dagster as dg

EXECUTOR_ENV = "GRAPHUNIFIED_EXECUTOR"
CHOICES = ("in_process", "multiprocess", "k8s", "celery")
DEFAULT = "in_process"
# Step processes fork from one server that imported the pipeline once (milliseconds per step)
# instead of each starting Python and re-importing Dagster, models and the code location (seconds).
PRELOADED = "graphunified_assets.definitions"
FORKSERVER = {"multiprocess": {"start_method": {"forkserver": {"preload_modules": [PRELOADED]}}}}


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


def executor_from_env(environ: dict[str, str] | None = None) -> dg.ExecutorDefinition:
    """The executor named by GRAPHUNIFIED_EXECUTOR; a clear error for unknown or uninstalled ones."""
    name = (environ if environ is not None else dict(os.environ)).get(EXECUTOR_ENV, DEFAULT)
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
            from dagster_celery import celery_executor
        except ImportError:
            raise _missing("celery", "dagster-celery") from None
        return celery_executor
    raise ValueError(f"{EXECUTOR_ENV}={name!r} is not an executor; use one of {', '.join(CHOICES)}.")


def _missing(extra: str, package: str) -> ImportError:
    return ImportError(
        f"{EXECUTOR_ENV}={extra} needs {package}: pip install 'graph-unified[{extra}]' "
        "(into the image or environment that loads the code location)."
    )
