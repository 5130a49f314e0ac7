"""The periodic refresh: rebuild the global stage on a cron, as `index --refresh` does by hand.

The sensor and declarative automation keep the index current as documents change; the schedule
covers what they cannot see — changed graph or query settings, an upgrade, a rebuild that a
failed run left behind. Cached texts and reused reports make it cheap when nothing changed.
"""

from __future__ import annotations

from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import dagster as dg
from dagster._utils.schedules import is_valid_cron_string

from graphunified_assets.defs.catalog import OWNERS, deliberate_beta
from graphunified_assets.defs.jobs import REFRESH_INDEXES, refresh_indexes_job
from graphunified_query.core.settings.model import AutomationSettings, SettingsError

NIGHTLY_REFRESH = "nightly_refresh"


def refresh_schedule(settings: AutomationSettings, run_tags: dict[str, str]) -> dg.ScheduleDefinition:
    """`nightly_refresh` on ``automation.refresh_cron``; off unless ``automation.refresh_enabled``.
    ``run_tags`` name the home its runs write to (graphunified_assets/ops/run_home.py)."""
    if not is_valid_cron_string(settings.refresh_cron):
        raise SettingsError(
            f"automation.refresh_cron {settings.refresh_cron!r} is not a cron string; "
            "use five fields, e.g. '0 3 * * *' (03:00 every day)."
        )
    try:
        ZoneInfo(settings.refresh_timezone)
    except (ZoneInfoNotFoundError, ValueError):
        raise SettingsError(
            f"automation.refresh_timezone {settings.refresh_timezone!r} is not a time zone; "
            "use an IANA name such as 'UTC' or 'Europe/Berlin'."
        ) from None
    with deliberate_beta("owners"):
        return dg.ScheduleDefinition(
            name=NIGHTLY_REFRESH,
            job=refresh_indexes_job,
            cron_schedule=settings.refresh_cron,
            execution_timezone=settings.refresh_timezone,
            default_status=(
                dg.DefaultScheduleStatus.RUNNING
                if settings.refresh_enabled
                else dg.DefaultScheduleStatus.STOPPED
            ),
            tags={"graphunified/trigger": "schedule", **run_tags},
            description=f"Rebuild graph, communities, reports and indexes ({REFRESH_INDEXES}) on a cron.",
            owners=OWNERS,
        )
