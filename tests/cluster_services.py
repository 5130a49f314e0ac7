"""Real Redis and PostgreSQL servers on 127.0.0.1 for the Celery test: Debian's `redis-server` and
`postgresql` (`make deploy-deps` installs both), PostgreSQL's `initdb` into a temporary folder.
Nothing is faked: the pipeline talks to them over sockets as it would to a cluster's."""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, ExitStack, contextmanager
from pathlib import Path
from typing import Any

# A PostgreSQL built into /usr/local, else Debian's (its binaries are not on PATH), newest first.
PG_BINS = (Path("/usr/local/bin"), *sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True))
PG_USER = "dagster"
PG_PASSWORD = "cluster-test-password"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def missing_services() -> str | None:
    """Why the servers cannot start here, or None."""
    if shutil.which("redis-server") is None:
        return "redis-server is missing: `sudo make deploy-deps` installs Debian's redis-server, postgresql"
    if _binary("initdb") == "initdb" and shutil.which("initdb") is None:
        return "PostgreSQL's initdb is missing: `sudo make deploy-deps` installs Debian's postgresql"
    return None


@contextmanager
def started(*servers: AbstractContextManager[Any]) -> Iterator[list[Any]]:
    """Enter ``servers`` at once (each waits for its port in a thread of its own); their values."""
    with ExitStack() as stack, ThreadPoolExecutor(len(servers)) as pool:
        futures = [pool.submit(server.__enter__) for server in servers]
        for server, future in zip(servers, futures, strict=True):
            if future.exception() is None:  # (waits) a started server is stopped even if another failed
                stack.push(server)
        yield [future.result() for future in futures]


def _wait_port(port: int, process: subprocess.Popen[bytes], what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{what} exited with {process.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"{what} did not listen on {port} within {timeout}s")


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@contextmanager
def redis_server(folder: Path) -> Iterator[str]:
    """A Redis server; yields its URL."""
    port = free_port()
    folder.mkdir(parents=True, exist_ok=True)
    args = ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--dir", str(folder)]
    process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_port(port, process, "redis-server")
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        _stop(process)


def _as_postgres(args: list[str]) -> list[str]:
    """PostgreSQL refuses to run as root: as root (CI), run it as the `postgres` user."""
    if os.geteuid() != 0:
        return args
    return ["runuser", "-u", "postgres", "--", *args]


def _binary(name: str) -> str:
    found = [folder / name for folder in PG_BINS if (folder / name).exists()]
    return str(found[0]) if found else (shutil.which(name) or name)


@contextmanager
def postgres_server(*, fsync: bool = False) -> Iterator[dict[str, object]]:
    """A PostgreSQL server; yields dagster-postgres's `postgres_db` config. Its folder is a fresh
    one of its own: as root it runs as `postgres`, which cannot enter pytest's (0700) tmp dirs.
    Tests run it without fsync; a benchmark (bench/run_storage.py) with it, as a deployment would."""
    folder = Path(tempfile.mkdtemp(prefix="graphunified-pg-"))
    data = folder / "pgdata"
    password_file = folder / "pw"
    password_file.write_text(PG_PASSWORD, encoding="utf-8")
    if os.geteuid() == 0:
        postgres = pwd.getpwnam("postgres")
        for path in (folder, password_file):
            os.chown(path, postgres.pw_uid, postgres.pw_gid)
    initdb = [_binary("initdb"), "-D", str(data), "-U", PG_USER, "--pwfile", str(password_file), "-A", "md5"]
    subprocess.run(_as_postgres(initdb), check=True, capture_output=True)
    port = free_port()
    args = [_binary("postgres"), "-D", str(data), "-h", "127.0.0.1", "-p", str(port), "-k", str(folder)]
    args += ["-c", f"fsync={'on' if fsync else 'off'}", "-c", "max_connections=200"]
    process = subprocess.Popen(_as_postgres(args), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_port(port, process, "postgres")
        _wait_accepting(port, process)
        yield _postgres_db(port, "postgres")  # initdb's own database: no client binary needed
    finally:
        _stop(process)
        shutil.rmtree(folder, ignore_errors=True)


def _wait_accepting(port: int, process: subprocess.Popen[bytes], timeout: float = 60) -> None:
    """Until a session opens: PostgreSQL listens before it accepts one ("the database system is
    starting up" on a loaded machine, seen under `make test -n`)."""
    import psycopg2

    deadline = time.monotonic() + timeout
    while True:
        try:
            psycopg2.connect(
                host="127.0.0.1", port=port, user=PG_USER, password=PG_PASSWORD, dbname="postgres"
            ).close()
            return
        except psycopg2.OperationalError:
            if process.poll() is not None or time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def _postgres_db(port: int, db_name: str) -> dict[str, object]:
    return {
        "hostname": "127.0.0.1",
        "port": port,
        "username": PG_USER,
        "password": {"env": "DAGSTER_PG_PASSWORD"},
        "db_name": db_name,
        "scheme": "postgresql+psycopg2",
    }
