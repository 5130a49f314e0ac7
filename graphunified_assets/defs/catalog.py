"""How the code location presents itself in the UI: groups in data-flow order and one owner.

Groups follow the data flow without cycles (per document: ingest → embed → extract; then the
global stage: vectors → graph → indexes → publish), so the UI's collapsed group boxes read left
to right and a job can select its stage by group. Declared once here; jobs, the automation
sensor and every asset take their groups from these names.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType

import dagster as dg

from graphunified_assets.lib.extraction.extraction_cache import source_digest

INGEST, EMBED, EXTRACT = "ingest", "embed", "extract"
VECTORS, GRAPH, INDEXES, PUBLISH = "vectors", "graph", "indexes", "publish"
PER_DOCUMENT_GROUPS = (INGEST, EMBED, EXTRACT)
GLOBAL_GROUPS = (VECTORS, GRAPH, INDEXES, PUBLISH)
FLOW = (*PER_DOCUMENT_GROUPS, *GLOBAL_GROUPS)

# Who answers for the pipeline; shown on every asset, sensor and schedule in the UI.
OWNERS = ["team:graph-unified"]


@contextmanager
def deliberate_beta(*parameters: str) -> Iterator[None]:
    """Use Dagster parameters it marks beta (batched backfills, owners of sensors and schedules)
    without a warning on every load: dagster is pinned, so their behaviour cannot shift under us.
    Only the named parameters are silenced; any other warning still shows."""
    with warnings.catch_warnings():
        for parameter in parameters:
            warnings.filterwarnings("ignore", message=f"Parameter `{parameter}`", category=dg.BetaWarning)
        yield


def logic_version(*modules: ModuleType) -> str:
    """An asset's `code_version`: a digest of the library modules that decide its rows, so the UI
    marks it stale exactly when an upgrade changed that logic (not on every unrelated commit)."""
    return source_digest(*modules)[:12]


def with_owners(assets: list[dg.AssetsDefinition | dg.AssetSpec]) -> list[dg.AssetsDefinition | dg.AssetSpec]:
    """Every asset carries the pipeline's owners."""
    return [
        a.replace_attributes(owners=OWNERS)
        if isinstance(a, dg.AssetSpec)
        else a.map_asset_specs(lambda spec: spec.replace_attributes(owners=OWNERS))
        for a in assets
    ]
