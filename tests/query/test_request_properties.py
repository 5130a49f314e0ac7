"""Property-based: any request body gives a valid request or a clear error naming the field; any
settings file gives settings (and an engine) or a `SettingsError` naming the key. Never another
exception type: what a user sends or writes is never answered by a traceback."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from graphunified_query.context.options import PIPELINE_KEYS
from graphunified_query.core.settings.model import Settings, SettingsError, load_settings
from graphunified_query.engine.query_engine import QueryEngine
from graphunified_query.engine.request import QueryRequest, RequestError, resolve
from graphunified_query.strategies.composable.named import KINDS, STRUCTURE
from graphunified_query.strategies.registry import AUTO, STRATEGIES

PARAM_NAMES = sorted(
    {p for s in STRATEGIES.values() for p in s.params.model_fields} | {"alpah", "k", "top_k"}
)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**12), max_value=10**12),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.sampled_from(["local", "llm", "voyage", "mmr", "bfs", "weighted", "hybrid", "corpus", "md"]),
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6,
)
bodies = st.fixed_dictionaries(
    {},
    optional={
        "question": st.one_of(st.text(max_size=40), scalars),
        "strategy": st.one_of(st.sampled_from([*STRATEGIES, AUTO, "nave", ""]), scalars),
        "top_k": st.one_of(st.integers(min_value=-5, max_value=10**6), scalars),
        "params": st.one_of(st.dictionaries(st.sampled_from(PARAM_NAMES), values, max_size=3), values),
        "context": st.one_of(
            st.dictionaries(st.sampled_from([*sorted(PIPELINE_KEYS), "risk"]), values, max_size=2), values
        ),
        "retrieve_only": values,
        "topk": st.integers(),
    },
)


def _names_a_field(message: str, field: tuple[str, ...]) -> bool:
    # A name with control characters is quoted escaped ('\x1f'), as it should be in one line.
    named = {text for part in field[:1] + field[-1:] for text in (str(part), repr(str(part))[1:-1])}
    return bool(message.strip()) and "\n" not in message and (not field or any(n in message for n in named))


@settings(max_examples=300, deadline=None)
@given(body=bodies)
@example(body={"question": "0", "params": {"\x1f": None}})  # found by a CI run: named escaped
def test_any_request_body_is_a_request_or_a_clear_error(body: dict[str, Any]) -> None:
    try:
        request = QueryRequest.model_validate(body)
    except ValidationError as error:
        problem = error.errors(include_url=False)[0]
        assert problem["loc"], error  # the body's field is named
        return
    try:
        resolved = resolve(request, STRATEGIES, Settings())
    except RequestError as error:
        assert error.field, error
        assert _names_a_field(str(error), error.field), (str(error), error.field)
        return
    assert resolved.top_k >= 1 and resolved.strategy in (*STRATEGIES, AUTO)
    assert all(math.isfinite(v) for v in resolved.call_params.values() if isinstance(v, float))


SECTIONS = sorted(Settings.model_fields)
strategy_entries = st.dictionaries(
    st.sampled_from([*STRATEGIES, "mixed", "reranked", "hybird"]),
    st.dictionaries(
        st.sampled_from([*PARAM_NAMES, *STRUCTURE, "mode", "reranker"]),
        values | st.sampled_from([*STRATEGIES]),
        max_size=3,
    )
    | values,
    max_size=2,
)
section_values = st.dictionaries(
    st.text(min_size=1, max_size=10)
    | st.sampled_from(["provider", "model", "size", "top_k", "default_strategy"]),
    values,
    max_size=3,
)
files = st.fixed_dictionaries(
    {"embedding": st.just({"provider": "local"})},
    optional={
        **{name: section_values | values for name in SECTIONS if name != "embedding"},
        "strategies": strategy_entries,
        "unknown_section": values,
    },
)


@pytest.fixture(scope="module")
def settings_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("settings-properties")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(content=files)
def test_any_settings_file_is_settings_or_a_clear_error(
    content: dict[str, Any], settings_dir: Path, engine: QueryEngine
) -> None:
    (settings_dir / "settings.yaml").write_text(yaml.safe_dump(content), encoding="utf-8")
    try:
        loaded = load_settings(settings_dir, environ={})
        # Strategy entries (parameters, compositions) are checked when an engine is made of them.
        QueryEngine(engine.snapshot, loaded, engine.embedder, llm=engine.llm)
    except SettingsError as error:
        message = str(error)
        named = {*content, *(k for v in content.values() if isinstance(v, dict) for k in v)}
        assert any(str(key) in message for key in named), message
        return
    assert set(KINDS)  # a valid file: the engine serves it (its strategies are all checked)
