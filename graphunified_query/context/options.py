"""Which `QuerySettings` fields are per-call context options (``ask(..., max_risk_level="high")``).

A request may set these for one call, in its ``context`` or mixed into ``params`` as ``--param``
does; `request.resolve` validates them as settings (a typo or an out-of-range value is an error).
A field is one when `core/settings/query.py` marks it ``json_schema_extra=PER_CALL``.
"""

from __future__ import annotations

from graphunified_query.core.settings.query import PER_CALL, QuerySettings

PIPELINE_KEYS = frozenset(
    name for name, field in QuerySettings.model_fields.items() if field.json_schema_extra == PER_CALL
)
