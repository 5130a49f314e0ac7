"""One rebuild per data home at a time.

`index` holds an exclusive `flock` on `<home>/index.lock` for its whole duration; the kernel
drops it when the process dies, even by SIGKILL, so a crash can never leave the home locked.
The file's text (pid, command, start time, current run) only tells a second caller who holds
it. Runs launched from the Dagster UI or daemon are serialized by the instance's run queue
(`dagster.yaml`: one run at a time per home); `index` also refuses while one of those is queued
or running, and marks the runs of an earlier `index` that was killed as failed, since they would
otherwise stay "started" forever and block that queue; so are UI or daemon runs whose process
died (`dead_runs.py`).
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import dagster as dg

from graphunified_assets.ops.dead_runs import why_dead
from graphunified_query.core.layout import HomeLayout

# Tags on every run `index` executes in process: whose it is, so a later `index` can tell a run
# that died with its process from one the UI or daemon launched.
LAUNCHED_BY_TAG = "graphunified/launched_by"
PID_TAG = "graphunified/pid"
_WAITING = [dg.DagsterRunStatus.QUEUED, dg.DagsterRunStatus.NOT_STARTED]
_ACTIVE = [dg.DagsterRunStatus.STARTING, dg.DagsterRunStatus.STARTED, dg.DagsterRunStatus.CANCELING]
_FINISHED = [dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED]


class HomeLocked(RuntimeError):
    """Another rebuild of the same home is running; the message says who and what to do."""


class HomeLock:
    """The held lock; `note_run` records the current Dagster run for whoever finds it taken."""

    def __init__(self, path: Path, fd: int, command: str) -> None:
        self.path = path
        self._fd = fd
        self._holder = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "command": command,
            "since": datetime.now(UTC).isoformat(timespec="seconds"),
        }
        self._write()

    def note_run(self, run: str) -> None:
        self._holder["run"] = run
        self._write()

    def _write(self) -> None:
        data = json.dumps(self._holder).encode()
        os.ftruncate(self._fd, 0)
        os.pwrite(self._fd, data, 0)

    def release(self) -> None:
        os.ftruncate(self._fd, 0)
        fcntl.flock(self._fd, fcntl.LOCK_UN)
        os.close(self._fd)


@contextmanager
def home_lock(layout: HomeLayout, *, command: str) -> Iterator[HomeLock]:
    """Hold the home's index lock, or raise `HomeLocked` at once (never wait silently)."""
    layout.home.mkdir(parents=True, exist_ok=True)
    path = layout.index_lock
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise HomeLocked(
            f"{layout.home} is already being indexed by {describe_holder(path)}. Wait for it to finish "
            f"(or stop that process) and run the command again; a stopped or killed process releases "
            f"the lock by itself ({path})."
        ) from None
    lock = HomeLock(path, fd, command)
    try:
        yield lock
    finally:
        lock.release()


def describe_holder(path: Path) -> str:
    try:
        holder = json.loads(path.read_text(encoding="utf-8") or "{}")
    except (OSError, ValueError):
        holder = {}
    if not holder:
        return "another process (starting up)"
    parts = [f"pid {holder.get('pid')} on {holder.get('host')}", f"since {holder.get('since')}"]
    if holder.get("run"):
        parts.append(f"Dagster run {holder['run']}")
    return f"`{holder.get('command', '?')}` ({', '.join(parts)})"


def refuse_foreign_runs(instance: dg.DagsterInstance, home: Path) -> list[str]:
    """Raise `HomeLocked` while a UI/daemon run of this home is queued or running.

    Runs of an earlier `index` still marked in progress died with it (this caller holds the
    flock that process held), so they are marked failed; their ids are returned.
    """
    records = instance.get_run_records(filters=dg.RunsFilter(statuses=_WAITING + _ACTIVE))
    stale: list[str] = []
    for record in records:
        run = record.dagster_run
        if run.tags.get(LAUNCHED_BY_TAG) == "index" and run.tags.get(PID_TAG) != str(os.getpid()):
            instance.report_run_failed(run, "the `index` process running it was stopped or killed")
            stale.append(run.run_id)
            continue
        if run.tags.get(PID_TAG) == str(os.getpid()):
            continue
        if (dead := why_dead(instance, run)) is not None:
            instance.report_run_failed(run, f"marked failed by `index`: {dead}")
            stale.append(run.run_id)
            continue
        since = record.start_time or record.create_timestamp.timestamp()
        started = datetime.fromtimestamp(since, UTC).isoformat(timespec="seconds")
        raise HomeLocked(
            f"Dagster run {run.run_id} ({run.job_name}, {run.status.value.lower()} since {started}) is "
            f"updating {home}. Wait for it to finish, or terminate it in the Dagster UI (`make ui`, "
            f"Runs tab), then run the command again."
        )
    _free_slots_of_finished_runs(instance)
    return stale


def _free_slots_of_finished_runs(instance: dg.DagsterInstance) -> None:
    """Pool slots (`models`, `llm`) a killed run still holds would make every later step wait
    forever; the daemon frees them only when it runs, and `index` runs without it."""
    storage = instance.event_log_storage
    if not storage.supports_global_concurrency_limits:
        return
    holders = storage.get_concurrency_run_ids()
    if not holders:
        return
    finished = dg.RunsFilter(run_ids=sorted(holders), statuses=_FINISHED)
    for record in instance.get_run_records(filters=finished):
        storage.free_concurrency_slots_for_run(record.dagster_run.run_id)


def fail_own_runs(instance: dg.DagsterInstance, reason: str) -> list[str]:
    """Mark this process's runs still in progress as failed (their child process died); their ids."""
    records = instance.get_run_records(filters=dg.RunsFilter(statuses=_ACTIVE, tags=run_tags()))
    for record in records:
        instance.report_run_failed(record.dagster_run, reason)
    return [record.dagster_run.run_id for record in records]


def run_tags() -> dict[str, str]:
    return {LAUNCHED_BY_TAG: "index", PID_TAG: str(os.getpid())}
