"""A damaged store: readers name the file and the command that rebuilds it; `index` rebuilds
what is derivable by itself and says so."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from graphunified_assets.defs.resources import GraphUnifiedResource
from graphunified_assets.ops.indexing import index
from graphunified_query import cli as query_cli
from graphunified_query.core.layout import HomeLayout, partition_file_stem
from graphunified_query.core.stores.errors import StoreDamaged
from graphunified_query.core.stores.publication import current
from graphunified_query.snapshot.loader import load_snapshot
from tests.conftest import SAMPLE_DOCS

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    """An offline index of the sample documents, built once; tests damage copies of it."""
    root = tmp_path_factory.mktemp("built")
    input_dir = root / "input"
    for name, content in SAMPLE_DOCS.items():
        (input_dir / name).parent.mkdir(parents=True, exist_ok=True)
        (input_dir / name).write_text(content, encoding="utf-8")
    saved = os.environ.get("DAGSTER_HOME")
    index(GraphUnifiedResource(home=str(root / "home"), input_dir=str(input_dir)), echo=lambda _: None)
    yield root / "home", input_dir
    if saved is None:
        os.environ.pop("DAGSTER_HOME", None)
    else:
        os.environ["DAGSTER_HOME"] = saved


@pytest.fixture
def home(built: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    copy = tmp_path / "home"
    shutil.copytree(built[0], copy, symlinks=True)
    monkeypatch.setenv("DAGSTER_HOME", str(copy / "dagster"))
    return copy


def _truncate(path: Path) -> Path:
    with path.open("r+b") as handle:
        handle.truncate(path.stat().st_size // 2)
    return path


def _published(home: Path, relative: str) -> Path:
    generation = current(HomeLayout.at(home), rebuild_hint="")
    assert generation.root is not None
    return generation.root / relative


def _damage_lance(home: Path, table: str, damage: Callable[[Path], object]) -> Path:
    folder = home / "lancedb" / f"{table}.lance"
    for path in sorted((folder / "data").iterdir()):
        damage(path)
    return folder


def _delete(path: Path) -> Path:
    shutil.rmtree(path) if path.is_dir() else path.unlink()
    return path


# Each damages a home and returns the path the error must name.
DAMAGE: dict[str, Callable[[Path], Path]] = {
    "truncated parquet": lambda h: _truncate(_published(h, "tables/entities.parquet")),
    "deleted parquet": lambda h: _delete(_published(h, "tables/communities.parquet")),
    "deleted lance table": lambda h: _delete(h / "lancedb" / "fact_vectors.lance"),
    "truncated lance data": lambda h: _damage_lance(h, "chunk_vectors", _truncate),
    "deleted lance data": lambda h: _damage_lance(h, "entity_vectors", _delete),
    "deleted index file": lambda h: _delete(_published(h, "indexes/ppr_graph.npz")),
    "truncated index file": lambda h: _truncate(_published(h, "indexes/bm25/vocab.index.json")).parent,
}


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_a_damaged_store_is_an_error_naming_the_file_and_the_rebuild(home: Path, damage: str) -> None:
    named = DAMAGE[damage](home)
    with pytest.raises(StoreDamaged) as raised:
        load_snapshot(home)
    message = str(raised.value)
    assert str(named) in message
    assert f"python -m graphunified_assets index --home {home} --refresh" in message


def test_ask_reports_a_truncated_table_without_a_traceback(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    damaged = _truncate(_published(home, "tables/relationships.parquet"))
    code = query_cli.main(["ask", "Who founded the Hale Mill?", "--home", str(home), "--retrieve-only"])
    err = capsys.readouterr().err
    assert code != 0 and "Traceback" not in err
    assert str(damaged) in err and "--refresh" in err


def test_index_rebuilds_damaged_derived_files_and_says_so(built: tuple[Path, Path], home: Path) -> None:
    layout = HomeLayout.at(home)
    before = load_snapshot(home)
    per_document = _truncate(layout.partition_path("text_units", "mill.md"))
    global_table = _truncate(layout.table_path("entities"))  # also the published link: same inode
    (layout.tables / "extractions" / f".{partition_file_stem('flood.txt')}.parquet.x.tmp").write_bytes(b"PAR")
    messages: list[str] = []
    index(GraphUnifiedResource(home=str(home), input_dir=str(built[1])), echo=messages.append)
    said = "\n".join(messages)
    assert f"{per_document} was damaged" in said and "re-indexed" in said
    assert f"{global_table} was damaged" in said and "rebuilds it" in said
    assert "1 incomplete" in said and "removed 1 temporary file" in said
    after = load_snapshot(home)
    assert after.generation == before.generation + 1
    assert sorted(after.chunks.ids) == sorted(before.chunks.ids)
    assert sorted(e["title"] for e in after.entities) == sorted(e["title"] for e in before.entities)


def test_refresh_repairs_a_damaged_lance_table(built: tuple[Path, Path], home: Path) -> None:
    before = load_snapshot(home)
    _damage_lance(home, "chunk_vectors", _truncate)
    with pytest.raises(StoreDamaged, match="chunk_vectors"):
        load_snapshot(home)
    index(GraphUnifiedResource(home=str(home), input_dir=str(built[1])), echo=lambda _: None, refresh=True)
    after = load_snapshot(home)
    assert sorted(after.chunks.ids) == sorted(before.chunks.ids)
