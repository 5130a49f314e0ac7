"""Layer boundaries, enforced: the query package never imports Dagster or the pipeline package,
and the pipeline's plain-Python `lib/` never imports Dagster (or the Dagster layer above it).

Imports are read from the syntax tree of every module, lazy imports inside functions included,
so a breach fails here even when no test happens to execute it.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _imports(package: Path) -> dict[str, set[str]]:
    """module path -> every module name it imports (absolute imports; relative ones resolved)."""
    found: dict[str, set[str]] = {}
    for path in sorted(package.rglob("*.py")):
        names: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names.add(node.module)
        found[str(path.relative_to(ROOT))] = names
    return found


def _breaches(package: Path, forbidden: tuple[str, ...]) -> list[str]:
    return [
        f"{module} imports {name}"
        for module, names in _imports(package).items()
        for name in sorted(names)
        if any(name == f or name.startswith(f"{f}.") for f in forbidden)
    ]


def test_query_package_imports_neither_dagster_nor_the_pipeline() -> None:
    assert _breaches(ROOT / "graphunified_query", ("dagster", "graphunified_assets")) == []


def test_pipeline_lib_is_plain_python() -> None:
    dagster_layer = tuple(
        f"graphunified_assets.{p.stem}"
        for p in (ROOT / "graphunified_assets").glob("*.py")
        if p.stem != "__init__"
    )
    forbidden = (
        "dagster",
        "dagster_k8s",
        "dagster_celery",
        *dagster_layer,
        "graphunified_assets.defs.assets",
    )
    assert _breaches(ROOT / "graphunified_assets" / "lib", forbidden) == []


def test_the_scan_sees_imports() -> None:
    """Guard the guard: the scan finds known imports, lazy ones included."""
    imports = _imports(ROOT / "graphunified_assets")
    assert "dagster" in imports["graphunified_assets/defs/resources.py"]
    assert "graphunified_assets.lib.reports.llm_reporter" in imports["graphunified_assets/defs/resources.py"]
