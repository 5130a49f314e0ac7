"""A run carries its home: the home a step writes to comes from the run, never from the worker.

Every launch path (``index``, the sensors, the schedule, declarative automation) tags its runs with
the home's absolute path and its id (``home.id``, made once per home). A step — in the run's own
process, a forked child, a Celery worker or a step pod — resolves its home from those tags, and
refuses to start when the folder at that path on its machine is another home (a different volume
mounted there, or none): writing there would corrupt a home the run was not launched for.

A run launched without the tags (the UI's "Materialize" button and asset backfills launch
Dagster's implicit asset job, whose tags no code can set) is tagged with the code location's home
by its executor (`stamp_home`, defs/executors.py) in the run's process, before any step starts.
A step of a run without them (one started before that) uses the code location's home, unless its
instance is another home's (``<home>/dagster``): then it fails too, rather than write there.
"""

from __future__ import annotations

import hashlib
import os
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from graphunified_query.core.layout import HomeLayout

if TYPE_CHECKING:
    import dagster as dg

HOME_TAG = "graphunified/home"
HOME_ID_TAG = "graphunified/home_id"
HOME_ID_FILE = "home.id"


class WrongHome(Exception):
    """A step would write to a home other than its run's; the message is one line saying what to do."""


def home_id(layout: HomeLayout, *, create: bool = True) -> str | None:
    """The home's random id, made on first use (None when missing and ``create`` is off, or the
    home folder does not exist). Created by hard-linking a complete file into place, so two
    processes making it at once (a webserver and a worker loading the code location) agree."""
    path = layout.home / HOME_ID_FILE
    if not path.exists():
        if not create or not layout.home.is_dir():
            return None
        staging = path.with_name(f".{HOME_ID_FILE}.{uuid.uuid4().hex}")
        staging.write_text(uuid.uuid4().hex, encoding="utf-8")
        try:
            os.link(staging, path)  # fails if another process made it first: theirs wins
        except FileExistsError:
            pass
        finally:
            staging.unlink()
    return path.read_text(encoding="utf-8").strip() or None


def home_tags(layout: HomeLayout, *, create: bool = True) -> dict[str, str]:
    """The tags a run of ``layout``'s home carries; its id is made here when the home exists and
    ``create`` is on (launchers: `index`, the sensor), not by loading the code location, which
    every worker does for the home of its own environment."""
    tags = {HOME_TAG: str(layout.home)}
    if (identity := home_id(layout, create=create)) is not None:
        tags[HOME_ID_TAG] = identity
    return tags


def stamp_home(instance: dg.DagsterInstance, run: dg.DagsterRun, layout: HomeLayout) -> None:
    """Tag ``run`` with ``layout``'s home when it was launched without one; a tagged run is left
    as it is (its launcher knew its home)."""
    if HOME_TAG not in run.tags:
        instance.add_run_tags(run.run_id, home_tags(layout))


def celery_queue(home: str | os.PathLike[str]) -> str:
    """The Celery queue of one home's steps: a worker serves the home it is started for, only."""
    path = HomeLayout.at(home).home
    return f"graphunified-{path.name or 'root'}-{hashlib.sha256(str(path).encode()).hexdigest()[:10]}"


def run_home(tags: Mapping[str, str], configured: str, instance_root: str | None) -> HomeLayout:
    """The home a step of a run with ``tags`` writes to; `WrongHome` when this machine cannot.

    ``configured`` is the code location's home (from this process's environment), used only for a
    run without the tags; ``instance_root`` is the run's Dagster instance folder."""
    tagged = tags.get(HOME_TAG)
    if tagged is None:
        layout = HomeLayout.at(configured)
        owner = _instance_home(instance_root)
        if owner is not None and owner != layout.home:
            raise WrongHome(
                f"this run carries no {HOME_TAG} tag and its instance belongs to home {owner}, but this "
                f"process was started for home {layout.home}; launch it from the UI of {owner}'s "
                "jobs, or start this worker with GRAPHUNIFIED_HOME set to that home"
            )
        return layout
    layout = HomeLayout.at(tagged)
    expected = tags.get(HOME_ID_TAG)
    if expected is not None:
        found = home_id(layout, create=False)
        if found != expected:
            seen = f"home id {found}" if found else "no home there"
            raise WrongHome(
                f"this run is for home {layout.home} (id {expected}), but this machine sees {seen} at "
                "that path; mount the run's home at the same path on every worker"
            )
    return layout


def _instance_home(instance_root: str | None) -> Path | None:
    """The home whose instance this is, when it is one (``<home>/dagster`` beside a ``home.id``)."""
    if instance_root is None:
        return None
    root = Path(instance_root).resolve()
    layout = HomeLayout.at(root.parent)
    if root != layout.dagster_home or not (layout.home / HOME_ID_FILE).exists():
        return None
    return layout.home
