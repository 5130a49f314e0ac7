"""The per-call context options are the `QuerySettings` fields marked PER_CALL, and only those: a
request may set each one for a call, and no other query setting."""

from __future__ import annotations

import pytest

from graphunified_query.context.options import PIPELINE_KEYS
from graphunified_query.core.settings.model import Settings
from graphunified_query.core.settings.query import PER_CALL, QuerySettings
from graphunified_query.engine.request import QueryRequest, RequestError, resolve
from graphunified_query.strategies.registry import STRATEGIES

DEFAULTS = QuerySettings()
FIELDS = sorted(
    n for n, f in QuerySettings.model_fields.items() if f.annotation not in (type(DEFAULTS.router),)
)


@pytest.mark.parametrize("name", FIELDS)
def test_a_query_setting_is_a_context_option_exactly_when_marked(name: str) -> None:
    marked = QuerySettings.model_fields[name].json_schema_extra == PER_CALL
    assert (name in PIPELINE_KEYS) == marked
    request = QueryRequest(
        question="Who founded the Hale Mill?", strategy="naive", context={name: getattr(DEFAULTS, name)}
    )
    if marked:
        assert getattr(resolve(request, STRATEGIES, Settings()).query, name) == getattr(DEFAULTS, name)
    else:
        with pytest.raises(RequestError, match=f"unknown context option '{name}'"):
            resolve(request, STRATEGIES, Settings())


def test_the_context_pipeline_has_options() -> None:
    assert {"max_risk_level", "document_ids", "context_window"} <= PIPELINE_KEYS
