"""Which Dagster executor runs the steps: chosen per deployment, the code stays the same.

``GRAPHUNIFIED_EXECUTOR`` = ``multiprocess`` (default: one process per step on this machine,
as `dagster dev` does), ``in_process`` (everything in the run's process), ``k8s`` (one Kubernetes
job per step; `pip install 'graph-unified[k8s]'`) or ``celery`` (steps queued to Celery workers;
`pip install 'graph-unified[celery]'`). The executor's own settings come from the run config
(deploy/*/run_config.yaml); provider limits across runs stay with the instance's pools
(`llm`, `models`), which every executor honours.
"""

from __future__ import annotations

import os

import dagster as dg

EXECUTOR_ENV = "GRAPHUNIFIED_EXECUTOR"
CHOICES = ("multiprocess", "in_process", "k8s", "celery")


def executor_from_env(environ: dict[str, str] | None = None) -> dg.ExecutorDefinition:
    """The executor named by GRAPHUNIFIED_EXECUTOR; a clear error for unknown or uninstalled ones."""
    name = (environ if environ is not None else dict(os.environ)).get(EXECUTOR_ENV, "multiprocess")
    if name == "multiprocess":
        return dg.multi_or_in_process_executor
    if name == "in_process":
        return dg.in_process_executor
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
