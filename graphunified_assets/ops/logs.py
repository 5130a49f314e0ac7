"""Structured logs: with ``logging.format: json`` every log line is one JSON object.

Covers the `index` command's progress, Python ``logging`` in the pipeline's processes (the CLI,
Dagster's run workers and code server) and Dagster's run logs (``context.log`` and run events,
through the `console` logger the Definitions install). API key values are masked wherever they
appear in a message.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import dagster as dg

from graphunified_query.core.plugins import secret_variables
from graphunified_query.core.settings.model import LoggingSettings

CLI_LOGGER = "graphunified"
_HANDLER_MARK = "_graphunified_json"


def _mask(text: str) -> str:
    for name in secret_variables():
        value = os.environ.get(name)
        if value and len(value) >= 8:  # short values would mask ordinary words
            text = text.replace(value, f"<{name}>")
    return text


class JsonFormatter(logging.Formatter):
    """One JSON object per record: time, level, logger, message, and the run context if any."""

    def format(self, record: logging.LogRecord) -> str:
        payload: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        meta = getattr(record, "dagster_meta", None)
        if isinstance(meta, dict):  # a Dagster run log: keep the bare message and its context
            payload["message"] = meta.get("orig_message") or payload["message"]
            event = meta.get("dagster_event")
            payload |= {
                "run_id": meta.get("run_id"),
                "job": meta.get("job_name"),
                "step": meta.get("step_key"),
                "event": event.event_type.name if event is not None else None,
            }
            payload = {k: v for k, v in payload.items() if v is not None}
        if record.exc_info:
            payload["exception"] = self.formatException(record.exc_info)
        payload["message"] = _mask(str(payload["message"]))
        if "exception" in payload:
            payload["exception"] = _mask(payload["exception"])
        return json.dumps(payload, ensure_ascii=False, default=str)


def json_handler(stream: Any = None) -> logging.Handler:
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter())
    setattr(handler, _HANDLER_MARK, True)
    return handler


def configure_logging(settings: LoggingSettings) -> Callable[[str], None]:
    """Set up the process's Python logging per settings; returns how the CLI reports progress
    (``print`` for text, a JSON log line for json). Idempotent: calling it twice adds nothing."""
    root = logging.getLogger()
    if settings.format != "json":
        return print
    if not any(getattr(h, _HANDLER_MARK, False) for h in root.handlers):
        root.addHandler(json_handler())
    root.setLevel(settings.level)
    logging.captureWarnings(True)  # warnings become JSON log lines too
    logger = logging.getLogger(CLI_LOGGER)
    return logger.info


def json_console_logger(level: str = "INFO") -> dg.LoggerDefinition:
    """Dagster run logs as one JSON object per line on stderr; same config as Dagster's console logger."""

    @dg.logger(
        config_schema={
            "log_level": dg.Field(str, is_required=False, default_value=level),
            "name": dg.Field(str, is_required=False, default_value="dagster"),
        },
        description="Run logs as one JSON object per line on stderr (logging.format: json).",
    )
    def _json_console(init_context: dg.InitLoggerContext) -> logging.Logger:
        config = init_context.logger_config
        logger = logging.Logger(config["name"], level=logging.getLevelName(config["log_level"].upper()))
        logger.addHandler(json_handler())
        return logger

    return _json_console


def run_loggers(settings: LoggingSettings) -> dict[str, dg.LoggerDefinition]:
    """The `console` logger of every job: Dagster's default for text, ours for json. Our jobs
    switch it on in their run config (jobs.CONSOLE_LOGS); Dagster uses it only when asked."""
    if settings.format != "json":
        return {}
    return {"console": json_console_logger(settings.level)}


def cli_error(settings: LoggingSettings) -> Callable[[str], None]:
    """How the CLI reports an error: ``error: ...`` on stderr, or an ERROR JSON log line."""
    if settings.format == "json":
        return logging.getLogger(CLI_LOGGER).error
    return lambda message: print(f"error: {message}", file=sys.stderr)
