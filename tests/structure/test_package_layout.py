"""Each package's top level stays a table of contents: at most a handful of files beside its folders
(`graphunified_query`: the public API, the CLI, the LangChain adapter; `graphunified_assets`: the
code location and the CLI entry). A new module goes into the folder of its concept."""

from __future__ import annotations

import pytest

from tests.structure.import_graph import PACKAGES, ROOT

MAX_TOP_LEVEL_FILES = 8


@pytest.mark.parametrize("package", PACKAGES)
def test_the_top_level_holds_few_files(package: str) -> None:
    files = sorted(p.name for p in (ROOT / package).iterdir() if p.is_file() and not p.name.startswith("."))
    assert len(files) <= MAX_TOP_LEVEL_FILES, f"{package}/ holds {len(files)} files: {files}"
