"""Assemble the Definitions for one data home (the code location and the CLI share this)."""

from __future__ import annotations

import dagster as dg

from graphunified_assets.defs.assets import (
    chunk_similarity,
    chunks,
    communities,
    community_reports,
    documents,
    embeddings,
    extraction,
    freshness,
    graph,
    graph_checks,
    graph_elements,
    graph_vectors,
    raw_documents,
    remote_snapshot,
    report_vectors,
    strategy_indexes,
    vector_index,
)
from graphunified_assets.defs.catalog import GLOBAL_GROUPS, OWNERS, with_owners
from graphunified_assets.defs.executors import executor_from_env
from graphunified_assets.defs.io_manager import DocumentTablesIOManager
from graphunified_assets.defs.jobs import index_documents_job, refresh_indexes_job
from graphunified_assets.defs.resources import GraphUnifiedResource
from graphunified_assets.defs.schedules import refresh_schedule
from graphunified_assets.defs.sensors import new_documents_sensor
from graphunified_assets.ops.index_progress import PROGRESS_LOGGER, step_progress_logger
from graphunified_assets.ops.logs import configure_logging, run_loggers
from graphunified_assets.ops.run_home import home_tags

ASSET_MODULES = (
    raw_documents,
    documents,
    chunks,
    embeddings,
    extraction,
    graph_elements,
    graph,
    communities,
    community_reports,
    graph_vectors,
    vector_index,
    report_vectors,
    strategy_indexes,
    remote_snapshot,
    chunk_similarity,
    graph_checks,
    freshness,
)


def _module_assets() -> list[dg.AssetsDefinition]:
    """The assets ASSET_MODULES declare, all ``@asset`` definitions: `with_owners` handles those
    and specs, not source or cacheable assets."""
    found = dg.load_assets_from_modules(ASSET_MODULES)
    assets = [a for a in found if isinstance(a, dg.AssetsDefinition)]
    if len(assets) != len(found):
        odd = sorted({type(a).__name__ for a in found if not isinstance(a, dg.AssetsDefinition)})
        raise TypeError(f"ASSET_MODULES declare {', '.join(odd)}; only @asset definitions are expected")
    return assets


def global_automation(run_tags: dict[str, str]) -> dg.AutomationConditionSensorDefinition:
    """Declarative automation, evaluated by this sensor; on by default so the global tables follow
    the per-document runs that new_documents_sensor launches (one rebuild per batch)."""
    return dg.AutomationConditionSensorDefinition(
        "global_tables_automation",
        target=dg.AssetSelection.groups(*GLOBAL_GROUPS),
        default_status=dg.DefaultSensorStatus.RUNNING,
        description="Rebuilds the global stage (vectors, graph, indexes, publication) once after "
        "documents were indexed or removed: declarative automation, one run per batch.",
        # This sensor class takes no `owners`; the UI shows its metadata instead.
        metadata={"owners": ", ".join(OWNERS)},
        run_tags=run_tags,  # its runs carry the home, as every launch path's do
    )


def build_definitions(resource: GraphUnifiedResource) -> dg.Definitions:
    settings = resource.settings
    # Every run launched from here writes to this home only; loading writes nothing into it.
    tags = home_tags(resource.layout, create=False)
    # Every process that loads the code location (CLI, code server, run workers) logs alike.
    configure_logging(settings.logging)
    return dg.Definitions(
        assets=with_owners([raw_documents.raw_documents, *_module_assets()]),
        asset_checks=dg.load_asset_checks_from_modules(ASSET_MODULES),
        jobs=[index_documents_job, refresh_indexes_job],
        sensors=[new_documents_sensor, global_automation(tags)],
        schedules=[refresh_schedule(settings.automation, tags)],
        # Naming any logger drops Dagster's default console one: it is named again (json replaces it).
        loggers={
            "console": dg.colored_console_logger,
            **run_loggers(settings.logging),
            PROGRESS_LOGGER: step_progress_logger(settings.logging),
        },
        executor=executor_from_env(home=resource.layout),  # it tags untagged runs with this home
        resources={
            "graphunified": resource,
            "document_tables": DocumentTablesIOManager(home=resource.home),
        },
    )
