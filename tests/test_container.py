"""The container image and the compose deployment: the image builds where a Docker engine answers
(skipped, saying so, where only the client exists), and compose gives every process that loads
the code location the variables a worker needs."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from graphunified_assets.ops.worker import ALWAYS, WORKER_VARIABLES

ROOT = Path(__file__).resolve().parent.parent


def _engine_problem() -> str | None:
    if shutil.which("docker") is None:
        return "no docker client"
    done = subprocess.run(["docker", "info"], capture_output=True, text=True, timeout=60)
    return (
        None
        if done.returncode == 0
        else f"no Docker engine answers `docker info`: {done.stderr.strip()[:200]}"
    )


def test_compose_gives_every_pipeline_process_the_worker_variables() -> None:
    compose = yaml.safe_load((ROOT / "deploy" / "compose.yaml").read_text(encoding="utf-8"))
    services = compose["services"]
    assert {"postgres", "redis", "worker", "dagster", "serve"} <= services.keys()
    required = {v.name for v in WORKER_VARIABLES if v.when == ALWAYS}
    for name in ("worker", "dagster", "serve"):
        assert required <= services[name]["environment"].keys(), name
    assert services["worker"]["command"][:2] == ["graphunified", "worker"]
    # The instance it copies is the one tests/test_celery_cluster.py runs, reaching the `postgres` service.
    instance = yaml.safe_load((ROOT / "deploy" / "celery" / "dagster.yaml").read_text(encoding="utf-8"))
    assert instance["run_storage"]["config"]["postgres_db"]["hostname"] == "postgres"


@pytest.mark.slow
def test_the_image_builds() -> None:
    if problem := _engine_problem():
        pytest.skip(f"{problem}; the image is built where Docker runs (docker build -t graph-unified .)")
    done = subprocess.run(
        ["docker", "build", "-q", "-t", "graph-unified:test", str(ROOT)],
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    ran = subprocess.run(
        [
            "docker",
            "run",
            "--rm",
            "--network",
            "none",
            "graph-unified:test",
            "graphunified",
            "worker",
            "--help",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert ran.returncode == 0 and "CELERY_BROKER_URL" in ran.stdout, ran.stderr[-3000:]
