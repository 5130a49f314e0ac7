"""Runs whose process died: found, marked failed, their pool slots freed, so nothing waits for them.

`kill -9` of `dagster dev` during a sensor run left the run STARTED for ever: it held the home's
only run slot and its `llm` pool slot, later runs queued behind it and `index` refused to start.
Dagster's run monitoring (`dagster.yaml`, run_monitoring) frees slots of finished runs and times
out runs that never start, but only while its daemon runs, and the default run launcher cannot
tell a dead worker from a slow one. So `index` checks itself:

- an in-progress run whose worker recorded its pid (Dagster's "Executing steps ... (pid: N)"
  engine event) is dead when no process has that pid on this machine;
- a queued run is dead when no Dagster daemon has sent a heartbeat for `DAEMON_SILENT_SECONDS`:
  nothing will ever start it (the document runs it stood for are done by `index` itself).

Only for the default run launcher, whose run workers are processes of this machine.
"""

from __future__ import annotations

import os
import time

import dagster as dg
from dagster._core.launcher import DefaultRunLauncher

DAEMON_SILENT_SECONDS = 120  # Dagster's daemons beat every 30 s
QUEUED = (dg.DagsterRunStatus.QUEUED, dg.DagsterRunStatus.NOT_STARTED)


def why_dead(instance: dg.DagsterInstance, run: dg.DagsterRun) -> str | None:
    """Why ``run`` (queued or in progress) will never finish, or None when it may."""
    if not isinstance(instance.run_launcher, DefaultRunLauncher):
        return None
    if run.status in QUEUED:
        if _daemon_alive(instance):
            return None
        return "queued while no Dagster daemon runs (`dagster dev` stopped), so nothing would start it"
    pid = worker_pid(instance, run.run_id)
    if pid is None or _process_exists(pid):
        return None
    return f"its process (pid {pid}) is gone: it was stopped or killed"


def worker_pid(instance: dg.DagsterInstance, run_id: str) -> int | None:
    """The pid the run's worker recorded when it started executing steps."""
    records = instance.get_records_for_run(run_id, of_type=dg.DagsterEventType.ENGINE_EVENT, limit=20).records
    for record in records:
        event = record.event_log_entry.dagster_event
        metadata = getattr(event.event_specific_data, "metadata", None) or {} if event else {}
        pid = metadata.get("pid")
        if pid is not None and str(pid.value).isdigit():
            return int(pid.value)
    return None


def _process_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process of that pid: alive
        return True
    return True


def _daemon_alive(instance: dg.DagsterInstance) -> bool:
    beats = instance.get_daemon_heartbeats().values()
    return any(time.time() - beat.timestamp < DAEMON_SILENT_SECONDS for beat in beats)
