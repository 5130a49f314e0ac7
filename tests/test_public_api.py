"""The public API of `graphunified_query`: `__all__` is exactly what the package exports, every
name resolves to the object its defining module holds, and importing the package stays cheap."""

from __future__ import annotations

import importlib
import subprocess
import sys
import types

import graphunified_query


def test_all_is_exactly_the_exports() -> None:
    exported = {
        name
        for name in dir(graphunified_query)
        if not name.startswith("_") and not isinstance(getattr(graphunified_query, name), types.ModuleType)
    }  # a subpackage becomes an attribute once something imports it: no export
    exported -= {"annotations", "TYPE_CHECKING", "Any"}  # the module's own imports
    assert sorted(graphunified_query.__all__) == sorted(exported)
    assert sorted(graphunified_query.__all__) == sorted(graphunified_query._EXPORTS)
    assert len(set(graphunified_query.__all__)) == len(graphunified_query.__all__)


def test_every_name_resolves_to_its_definition() -> None:
    for name in graphunified_query.__all__:
        value = getattr(graphunified_query, name)
        module = importlib.import_module(value.__module__)
        assert getattr(module, name) is value, name


def test_importing_the_package_loads_nothing_heavy() -> None:
    code = (
        "import sys, graphunified_query;"
        "heavy = [m for m in ('numpy', 'pyarrow', 'pydantic', 'lancedb', 'spacy', 'langchain_core',"
        " 'llama_index')"
        " if m in sys.modules]; print(','.join(heavy))"
    )
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert loaded.stdout.strip() == ""


def test_an_unknown_name_is_an_attribute_error() -> None:
    try:
        graphunified_query.NoSuchThing  # noqa: B018
    except AttributeError as error:
        assert "NoSuchThing" in str(error)
    else:
        raise AssertionError("an unknown name resolved")
