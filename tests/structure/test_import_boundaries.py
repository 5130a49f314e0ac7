"""Layer boundaries, enforced on the syntax tree of every module (lazy and TYPE_CHECKING imports
included, so a breach fails here even when no test happens to execute it):

- the pipeline (`graphunified_assets`) uses only `graphunified_query.core` of the query package;
- `core` is shared, so it imports nothing of the query side either (one documented exception);
- the query package never imports Dagster or the pipeline;
- the pipeline's plain-Python `lib/` never imports Dagster or the Dagster layer above it.
"""

from __future__ import annotations

from tests.structure.import_graph import Import, imports

CORE = "graphunified_query.core"
# (importer, imported, why): core modules that may reach the query side, lazily, and why.
CORE_EXCEPTIONS = {
    (
        "graphunified_query.core.settings.reference",
        "graphunified_query.strategies.registry",
    ): "the settings reference documents each registered strategy's parameters (only when generated)",
    (
        "graphunified_query.core.settings.model",
        "graphunified_query.strategies.settings_check",
    ): "a settings file's strategies section is checked against the registry on load, so `index` "
    "fails fast on a typo (only when the file has one)",
}


def _under(name: str, *prefixes: str) -> bool:
    return any(name == p or name.startswith(f"{p}.") for p in prefixes)


def _breaches(importers: tuple[str, ...], allowed: object) -> list[str]:
    found: list[Import] = [
        imp
        for imp in imports()
        if _under(imp.module, *importers) and not allowed(imp)  # type: ignore[operator]
    ]
    return [f"{imp.module}:{imp.line} imports {imp.target} ({imp.where})" for imp in found]


def test_the_pipeline_imports_only_core_of_the_query_package() -> None:
    def allowed(imp: Import) -> bool:
        return not _under(imp.target, "graphunified_query") or _under(imp.target, CORE)

    assert _breaches(("graphunified_assets",), allowed) == []


def test_core_imports_nothing_of_the_query_side() -> None:
    def allowed(imp: Import) -> bool:
        inside = not _under(imp.target, "graphunified_query") or _under(imp.target, CORE)
        return inside or (imp.module, imp.target) in CORE_EXCEPTIONS

    assert _breaches((CORE,), allowed) == []


def test_the_core_exceptions_are_still_needed() -> None:
    """An exception no import uses any more goes, so the list never outlives its reason."""
    used = {(imp.module, imp.target) for imp in imports()}
    assert set(CORE_EXCEPTIONS) <= used


def test_the_query_package_imports_neither_dagster_nor_the_pipeline() -> None:
    def allowed(imp: Import) -> bool:
        return not _under(imp.target, "dagster", "dagster_k8s", "dagster_celery", "graphunified_assets")

    assert _breaches(("graphunified_query",), allowed) == []


def test_the_pipeline_lib_is_plain_python() -> None:
    dagster_layer = ("graphunified_assets.defs", "graphunified_assets.definitions", "graphunified_assets.ops")

    def allowed(imp: Import) -> bool:
        return not _under(imp.target, "dagster", "dagster_k8s", "dagster_celery", *dagster_layer)

    assert _breaches(("graphunified_assets.lib",), allowed) == []


def test_the_scan_sees_imports() -> None:
    """Guard the guard: it finds known imports, lazy and TYPE_CHECKING ones included."""
    found = {(imp.module, imp.target, imp.where) for imp in imports()}
    assert ("graphunified_assets.defs.resources", "dagster", "module") in found
    assert (
        "graphunified_assets.defs.resources",
        "graphunified_assets.lib.reports.llm_reporter",
        "function",
    ) in found
    assert (
        "graphunified_query.core.providers.registry",
        "graphunified_query.core.settings.model",
        "type_checking",
    ) in found
