"""The Dagster code location: `dagster dev` and `dagster asset materialize` load `defs` from here."""

from __future__ import annotations

from graphunified_assets.defs.build import build_definitions
from graphunified_assets.defs.resources import default_resource

defs = build_definitions(default_resource())
