"""What `index` shows while a run works: steps done of the job's steps, and inside the long steps
documents parsed, chunks embedded and chunks extracted, each with counts and an ETA.

A 300-passage index used to be silent for minutes at a time (the run's own events are DEBUG, and
the console logger shows INFO). Both kinds go through `core.progress.Progress`: one line redrawn
on a terminal, a line per tenth of the work in a log; with ``logging.format: json`` each line is
an INFO log record instead, so the stream stays one JSON object per line.

The steps are counted by a Dagster logger (`PROGRESS_LOGGER`) that only `index` names in its run
config, so runs the UI, the sensors or the schedule launch print nothing more than before.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Iterable
from typing import Any, TextIO

import dagster as dg

from graphunified_query.core.progress import Progress
from graphunified_query.core.settings.model import LoggingSettings

PROGRESS_LOGGER = "progress"
_DONE = frozenset({"STEP_SUCCESS", "STEP_FAILURE", "STEP_SKIPPED"})


class _LogLines:
    """A stream that hands each whole line to a logger (for ``logging.format: json``)."""

    def __init__(self, logger: logging.Logger) -> None:
        self.logger, self.pending = logger, ""

    def isatty(self) -> bool:
        return False

    def write(self, text: str) -> int:
        self.pending += text
        *lines, self.pending = self.pending.split("\n")
        for line in lines:
            self.logger.info(line)
        return len(text)

    def flush(self) -> None:
        pass


def progress_stream(settings: LoggingSettings) -> TextIO:
    """Where progress goes: stderr, or the CLI's logger when the logs are JSON lines."""
    if settings.format == "json":
        return _LogLines(logging.getLogger("graphunified.progress"))  # type: ignore[return-value]
    return sys.stderr


def work_progress(settings: LoggingSettings, what: str, unit: str) -> Progress:
    """A step's own progress (``what``: e.g. "chunks extracted"), on `progress_stream`."""
    return Progress(what, unit, stream=progress_stream(settings))


class _StepCounter(logging.Handler):
    """Counts the run's finished steps from its Dagster events and reports them."""

    def __init__(self, progress: Progress, total: int) -> None:
        super().__init__(logging.DEBUG)
        self.progress, self.total, self.done = progress, total, 0

    def emit(self, record: logging.LogRecord) -> None:
        meta = getattr(record, "dagster_meta", None)
        event = meta.get("dagster_event") if isinstance(meta, dict) else None
        if event is None or event.event_type_value not in _DONE or "[" in (event.step_key or ""):
            return  # a shard (`<op>[<key>]`) is counted by its step's own progress lines
        self.done = min(self.done + 1, self.total)
        self.progress(self.done, self.total, str(event.step_key or ""))


def step_progress_logger(settings: LoggingSettings) -> dg.LoggerDefinition:
    """The `progress` logger: steps done of ``total`` (given in the run config by `index`)."""

    @dg.logger(
        config_schema={"what": dg.Field(str), "total": dg.Field(int)},
        description="Steps done of the run's steps, with an ETA (named in run config by `index` only).",
    )
    def _progress(init_context: dg.InitLoggerContext) -> logging.Logger:
        config = init_context.logger_config
        logger = logging.Logger(PROGRESS_LOGGER, level=logging.DEBUG)  # step events are DEBUG
        progress = Progress(config["what"], "steps", stream=progress_stream(settings))
        logger.addHandler(_StepCounter(progress, max(int(config["total"]), 1)))
        return logger

    return _progress


def progress_run_config(job: dg.JobDefinition) -> dict[str, Any]:
    """The run config's loggers entry that turns the step count on for a run of ``job``."""
    return {PROGRESS_LOGGER: {"config": {"what": job.name, "total": _static_steps(job.graph)}}}


def _static_steps(graph: dg.GraphDefinition) -> int:
    """The steps a run of ``graph`` has whatever its data: every op inside its graph assets too,
    but not the shards a step fans out (`defs/assets/sharded.py`), whose count the data decides."""
    steps = 0
    for name, node in graph.node_dict.items():
        if isinstance(node.definition, dg.GraphDefinition):
            steps += _static_steps(node.definition)
        elif not graph.dependency_structure.is_dynamic_mapped(name):
            steps += 1
    return steps


def embed_in_tenths(
    embed: Callable[[list[str]], object], texts: Iterable[str], progress: Progress, *, least: int = 64
) -> None:
    """Embed ``texts`` (into the embedding cache) shortest first, in calls of a tenth of their
    characters each (at least ``least`` texts) with a progress line after each: one call for a
    whole step's texts was minutes without a word. A tenth of the characters, not of the texts,
    as the model's time goes with their length (the longest tenth of 5,005 graph texts took 90 s);
    sorted, each call's batches are of like lengths as one call's were."""
    ordered = sorted(dict.fromkeys(texts), key=len)
    goal, size, start = sum(map(len, ordered)) / 10, 0, 0
    for end, text in enumerate(ordered, start=1):
        size += len(text)
        if end == len(ordered) or (size >= goal and end - start >= least):
            embed(ordered[start:end])
            progress(end, len(ordered))
            size, start = 0, end
