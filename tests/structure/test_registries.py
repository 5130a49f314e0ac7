"""The pluggable kinds share one registry shape (`core.registry`): every registered LLM, embedder
and reranker builds, or fails with its one-line missing-key error naming the variable; every list
of secret variables derives from the registries, and no module spells a key variable itself."""

from __future__ import annotations

import ast
import re
from typing import Any

import pytest

from graphunified_query.core.plugins import EMBEDDERS, LLMS, secret_variables
from graphunified_query.core.registry import MissingKey, Registry, UnknownName
from graphunified_query.core.settings.model import Settings
from graphunified_query.strategies.rerank.registry import RERANKERS, make_reranker
from tests.query.compose_support import make_context
from tests.structure.import_graph import modules

REGISTRIES: dict[str, Registry[Any]] = {"llm": LLMS, "embedder": EMBEDDERS, "reranker": RERANKERS}
ENTRIES = [(kind, name) for kind, registry in REGISTRIES.items() for name in registry.names()]
_KEY_VARIABLE = re.compile(r"[A-Z][A-Z0-9]*_API_KEY")


def _args(kind: str) -> tuple[tuple[Any, ...], dict[str, Any]]:
    if kind == "llm":
        settings = Settings.model_validate({"llm": {"openai_base_url": "http://127.0.0.1:9/v1"}})
        return (settings,), {"cache": None}
    if kind == "embedder":
        return (Settings().embedding,), {}
    return (make_context([("c1", "d1", "The Hale Mill was founded in 1862.")]),), {}


@pytest.mark.parametrize(("kind", "name"), ENTRIES)
def test_every_entry_builds_or_names_its_missing_key(kind: str, name: str) -> None:
    registry = REGISTRIES[kind]
    entry = registry.entry(name)
    args, kwargs = _args(kind)
    if entry.needs_key:
        with pytest.raises(MissingKey) as missing:
            registry.create(name, *args, environ={}, **kwargs)
        message = str(missing.value)
        assert "\n" not in message and entry.key_env_var in message and repr(name) in message
    environ = {entry.key_env_var: "test-key"} if entry.key_env_var else {}
    if (kind, name) == ("reranker", "llm"):  # needs the engine's LLM, which the bare context lacks
        with pytest.raises(ValueError, match="reranker 'llm' needs an LLM"):
            make_reranker(name, *args, environ=environ)
        return
    assert registry.create(name, *args, environ=environ, **kwargs) is not None


@pytest.mark.parametrize("registry", REGISTRIES.values(), ids=REGISTRIES)
def test_an_unknown_name_lists_the_registered_ones(registry: Registry[Any]) -> None:
    with pytest.raises(UnknownName) as unknown:
        registry.entry("no-such-thing")
    assert all(name in str(unknown.value) for name in registry.choices())


def test_the_secret_variables_are_the_registries_union() -> None:
    union = {v for registry in REGISTRIES.values() for v in registry.key_variables()}
    assert set(secret_variables()) == union
    assert len(secret_variables()) == len(union)


def test_no_module_spells_a_key_variable_but_the_registries() -> None:
    """A key variable is a registry entry's declaration, read from there everywhere else."""
    spelled = [
        f"{module}:{node.lineno} {node.value!r}"
        for module, path in modules().items()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and _KEY_VARIABLE.fullmatch(node.value)
        if module != "graphunified_query.core.plugins"
    ]
    assert spelled == []


def test_a_new_entry_is_a_valid_choice_at_once() -> None:
    """The settings accept a registered embedder by name, with no Literal to edit."""
    EMBEDDERS.register("toy", lambda settings, *, environ: object())
    try:
        assert Settings.model_validate({"embedding": {"provider": "toy"}}).embedding.provider == "toy"
    finally:
        EMBEDDERS.unregister("toy")
    with pytest.raises(ValueError, match=r"embedding\.provider 'toy' is not registered"):
        Settings.model_validate({"embedding": {"provider": "toy"}})
