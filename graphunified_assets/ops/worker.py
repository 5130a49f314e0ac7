"""A Celery worker for one home: every variable it needs, checked at start, then the worker itself.

`WORKER_VARIABLES` is the one list of what a worker's environment must hold; `graphunified worker`
checks it before starting (one line naming each missing variable), its `--help` (docs/cli.md)
prints it, and deploy/README.md lists the same names (a test compares them). The worker is
started with this interpreter (`python -m celery`'s entry point in process), so the venv's
`bin` need not be on PATH, and it listens only on its home's queue (`celery_queue`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from graphunified_query.core.layout import HomeLayout
from graphunified_query.core.plugins import EMBEDDERS, LLMS
from graphunified_query.core.registry import Registry

# The deployment's variables, declared here only (defs/resources.py and defs/executors.py import them).
EXECUTOR_ENV = "GRAPHUNIFIED_EXECUTOR"
HOME_ENV = "GRAPHUNIFIED_HOME"
BROKER_ENV = "CELERY_BROKER_URL"
BACKEND_ENV = "CELERY_RESULT_BACKEND"
# Set by `start_worker` for the steps it runs: their models share the cores with --concurrency others.
WORKER_CONCURRENCY_ENV = "GRAPHUNIFIED_WORKER_CONCURRENCY"
ALWAYS = "always"
# `{env: NAME}` in the instance's dagster.yaml: a worker resolves the run's instance config itself.
_INSTANCE_ENV = re.compile(r"\{\s*env:\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}")


@dataclass(frozen=True)
class Variable:
    """One variable of a worker's environment, when it is needed and why."""

    name: str
    when: str  # ALWAYS, or the condition, as the docs say it
    purpose: str


def _provider_key(registry: Registry[Any], name: str) -> str | None:
    """The key variable of a provider named explicitly (``auto`` decides by the key's presence)."""
    return None if name in registry.reserved else registry.entry(name).key_env_var


WORKER_VARIABLES: tuple[Variable, ...] = (
    Variable(EXECUTOR_ENV, ALWAYS, "`celery`: the worker loads the same job definitions as the run"),
    Variable(
        HOME_ENV,
        ALWAYS,
        "the home this worker serves (its queue), at the same absolute path as on the webserver and "
        "daemon: a shared volume",
    ),
    Variable(BROKER_ENV, ALWAYS, "the broker the runs submit steps to, e.g. redis://broker:6379/0"),
    Variable(
        BACKEND_ENV, "optional", "where step results go (default: the broker URL for Redis, else rpc://)"
    ),
    Variable(
        "DAGSTER_HOME",
        ALWAYS,
        "the home's Dagster instance folder (`$GRAPHUNIFIED_HOME/dagster`, holding dagster.yaml); "
        "every `{env: NAME}` that file names (e.g. DAGSTER_PG_PASSWORD) is needed too",
    ),
    Variable(
        " / ".join(LLMS.key_variables()),
        "when settings.yaml names that llm.provider",
        "the LLM provider's key, as on the webserver (with llm.provider `auto`, set it on both or neither)",
    ),
    Variable(
        " / ".join(EMBEDDERS.key_variables()),
        "when settings.yaml names embedding.provider voyage",
        "the embedding provider's key, as on the webserver",
    ),
    Variable(
        "AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY",
        "when storage.publish_uri is set",
        "the publishing step runs on a worker too",
    ),
)


def variables_help() -> str:
    """The list for `graphunified worker --help` (and so docs/cli.md)."""
    return "\n".join(f"  {v.name} ({v.when}): {v.purpose}" for v in WORKER_VARIABLES)


def worker_problems(environ: Mapping[str, str]) -> list[str]:
    """What keeps a worker with ``environ`` from running its home's steps, one line each."""
    problems = []
    missing = [v.name for v in WORKER_VARIABLES if v.when == ALWAYS and not environ.get(v.name, "").strip()]
    if missing:
        return [f"set {', '.join(missing)} (graphunified worker --help lists what each is for)"]
    if environ[EXECUTOR_ENV] != "celery":
        problems.append(
            f"{EXECUTOR_ENV}={environ[EXECUTOR_ENV]!r}: a Celery worker needs {EXECUTOR_ENV}=celery"
        )
    home = Path(environ[HOME_ENV])
    if not home.is_absolute():
        problems.append(f"{HOME_ENV}={home} is relative: use the absolute path the webserver uses")
    if not home.is_dir():
        return [*problems, f"{HOME_ENV}={home} is not a folder here: mount the shared home at that path"]
    instance = Path(environ["DAGSTER_HOME"]) / "dagster.yaml"
    if instance.exists():
        named = _INSTANCE_ENV.findall(instance.read_text(encoding="utf-8"))
        if absent := [n for n in dict.fromkeys(named) if not environ.get(n)]:
            problems.append(f"{instance} reads {', '.join(absent)} from the environment; set it")
    from graphunified_query.core.settings.model import load_settings  # not for `worker --help`

    settings = load_settings(HomeLayout.at(home).home)
    for kind, registry, name in (
        ("llm", LLMS, settings.llm.provider),
        ("embedding", EMBEDDERS, settings.embedding.provider),
    ):
        key = _provider_key(registry, name)
        if key and not environ.get(key, "").strip():
            problems.append(f"settings.yaml's {kind}.provider {name} needs {key}; set it as on the webserver")
    if settings.storage.publish_uri and not environ.get("AWS_ACCESS_KEY_ID"):
        problems.append(
            f"storage.publish_uri is {settings.storage.publish_uri}: set AWS_ACCESS_KEY_ID and "
            "AWS_SECRET_ACCESS_KEY (the publishing step runs on a worker)"
        )
    return problems


def start_worker(environ: Mapping[str, str], *, concurrency: int, name: str | None) -> int:
    """Run a Celery worker for ``environ``'s home until it is stopped (its exit status)."""
    from dagster_celery.make_app import make_app
    from dagster_celery.tasks import create_task

    from graphunified_assets.defs.executors import celery_config
    from graphunified_assets.ops.run_home import celery_queue

    config = celery_config(environ)
    os.environ[WORKER_CONCURRENCY_ENV] = str(concurrency)  # the steps' model threads (executors.py)
    app = make_app({**config, "config_source": {**config["config_source"]}})
    create_task(app)  # the task every step is sent as (dagster-celery's execute_plan)
    queue = celery_queue(environ[HOME_ENV])
    argv = ["worker", "-Q", queue, f"--concurrency={concurrency}", "--loglevel=INFO"]
    argv += ["--prefetch-multiplier=1", "-n", f"{name or 'graphunified'}-%h-{queue[-10:]}"]
    app.worker_main(argv)
    return 0
