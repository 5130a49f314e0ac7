"""A plain `index` repairs what readers or runs would fail on, with one line naming each file.

Damaged caches and `state.sqlite` used to wedge every later `index` inside a Dagster trace, and
damage to the published generation (a LanceDB or BM25 file, a garbage or deleted `CURRENT`) was
not seen by `index` at all: `ask` stayed broken until `index --refresh`.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from graphunified_assets.defs.resources import GraphUnifiedResource
from graphunified_assets.ops.indexing import index
from graphunified_query.core.layout import HomeLayout
from graphunified_query.core.stores.parquet import StoreError
from graphunified_query.core.stores.publication import current
from graphunified_query.snapshot.loader import load_snapshot
from tests.reliability.test_corrupt_store import DAMAGE
from tests.reliability.test_corrupt_store import built as built
from tests.reliability.test_corrupt_store import home as home

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def _index(home: Path, input_dir: Path) -> list[str]:
    lines: list[str] = []
    index(GraphUnifiedResource(home=str(home), input_dir=str(input_dir)), echo=lines.append)
    return lines


def _garbage(path: Path) -> Path:
    """Random bytes where the file was; its write-ahead log goes too (it could still hold every page)."""
    path.write_bytes(os.urandom(4096))
    for suffix in ("-wal", "-shm"):
        path.with_name(path.name + suffix).unlink(missing_ok=True)
    return path


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_a_plain_index_repairs_the_published_generation(
    home: Path, built: tuple[Path, Path], damage: str
) -> None:
    chunks = len(load_snapshot(home).chunks.ids)
    named = DAMAGE[damage](home)
    lines = _index(home, built[1])
    assert any(str(named) in line and "the global refresh rebuilds it" in line for line in lines), lines
    assert len(load_snapshot(home).chunks.ids) == chunks


@pytest.mark.parametrize("pointer", ["garbage", "deleted"])
def test_a_damaged_or_deleted_current_is_an_error_and_index_republishes(
    home: Path, built: tuple[Path, Path], pointer: str
) -> None:
    path = HomeLayout.at(home).published / "CURRENT"
    path.write_text("not a number\n") if pointer == "garbage" else path.unlink()
    with pytest.raises(StoreError, match="CURRENT"):  # never a silent switch to the live files
        current(HomeLayout.at(home), rebuild_hint="hint")
    lines = _index(home, built[1])
    assert any("CURRENT" in line for line in lines), lines
    assert load_snapshot(home).generation == current(HomeLayout.at(home), rebuild_hint="").number


@pytest.mark.parametrize("name", ["extraction_cache", "embedding_cache", "llm_cache", "index_state"])
def test_a_damaged_sqlite_file_is_moved_aside_and_rebuilt(
    home: Path, built: tuple[Path, Path], name: str
) -> None:
    layout = HomeLayout.at(home)
    path = _garbage(getattr(layout, name))
    (built[1] / "new.md").write_text("# New\n\nThe Harrow Valley Railway reached Eastfold in 1870.\n")
    try:
        lines = _index(home, built[1])
    finally:
        (built[1] / "new.md").unlink()
    (warning,) = [line for line in lines if "was damaged" in line and str(path) in line]
    assert "moved it to" in warning and "rebuilt" in warning
    assert list(path.parent.glob(f"{path.name}.damaged-*"))
    summary = next(line for line in lines if "unchanged" in line)
    assert "1 new, 0 changed, 0 incomplete, 0 removed, 3 unchanged" in summary  # the state came back
    assert "new.md" in load_snapshot(home).chunks.document_ids
