"""`status` tells searchable from parsed-only and failed, names the generation readers load, a
pending refresh, and what the next `index` will do (it said "34 documents indexed" right after a
crash when nothing was searchable)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from graphunified_assets.cli.main import main
from graphunified_assets.lib.ingest.index_state import IndexState
from graphunified_query.core.artifacts import BM25_FOLDER
from graphunified_query.core.layout import HomeLayout
from graphunified_query.core.stores.publication import current
from graphunified_query.core.stores.published_check import published_damage


def _status(home: Path, input_dir: Path, capsys: pytest.CaptureFixture[str]) -> str:
    capsys.readouterr()
    assert main(["status", "--home", str(home), "--input", str(input_dir)]) == 0
    return capsys.readouterr().out


def test_status_is_honest_about_a_home(
    input_dir: Path, home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["index", "--input", str(input_dir), "--home", str(home)]) == 0
    out = _status(home, input_dir, capsys)
    assert "3 documents searchable, 0 parsed but not searchable, 0 failed" in out
    assert "readers load generation 1, published 20" in out
    assert "0 new, 0 changed, 0 incomplete, 0 removed, 3 unchanged; nothing to refresh" in out

    (input_dir / "new.md").write_text("# New\n\nA new page.\n", encoding="utf-8")
    layout = HomeLayout.at(home)
    layout.refresh_pending.touch()  # as a crash in the global refresh leaves it
    IndexState(layout.index_state).record_failures("embed", [("flood.txt", "HTTP 500; re-run index")])
    out = _status(home, input_dir, capsys)
    assert "1 new, 0 changed" in out and "then the global refresh" in out
    assert "a global refresh is pending" in out
    assert "failed [embed] flood.txt: HTTP 500; re-run index" in out and ", 1 failed in" in out

    shutil.rmtree(layout.lancedb / "chunk_vectors.lance")  # nothing is searchable any more
    out = _status(home, input_dir, capsys)
    assert "0 documents searchable, 3 parsed but not searchable" in out


def test_a_changed_chunking_size_re_chunks_on_the_next_index(
    input_dir: Path, home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Changing chunking.size never re-chunked an indexed document, even with `index --refresh`,
    and `status` said there was nothing to refresh: the chunker's settings are now part of the
    staleness key."""
    settings = home / "settings.yaml"
    original = settings.read_text(encoding="utf-8") if settings.exists() else ""
    assert main(["index", "--input", str(input_dir), "--home", str(home)]) == 0
    layout = HomeLayout.at(home)

    def chunks() -> int:
        return sum(pq.read_metadata(p).num_rows for p in layout.partition_dir("text_units").glob("*.parquet"))

    before = chunks()
    settings.write_text(original + "chunking:\n  size: 16\n  overlap: 0\n  min_size: 1\n", encoding="utf-8")
    out = _status(home, input_dir, capsys)
    assert "3 to re-chunk (chunking settings changed)" in out and "then the global refresh" in out
    assert main(["index", "--input", str(input_dir), "--home", str(home)]) == 0
    assert chunks() > before  # smaller chunks, more of them
    out = _status(home, input_dir, capsys)
    assert "0 new, 0 changed, 0 incomplete, 0 removed, 3 unchanged; nothing to refresh" in out


def test_status_finds_what_ask_would_fail_on(
    input_dir: Path, home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`status` counted documents searchable when the published generation lacked a file `ask`
    loads (a damaged publish, or a first refresh killed before its indexes were written)."""
    assert main(["index", "--input", str(input_dir), "--home", str(home)]) == 0
    bm25 = current(HomeLayout.at(home), rebuild_hint="").index_path(BM25_FOLDER)
    shutil.rmtree(bm25)  # what readers load: the published generation's hard links
    out = _status(home, input_dir, capsys)
    assert "0 documents searchable, 3 parsed but not searchable" in out
    assert "a damaged index" in out and "bm25" in out


def test_status_after_a_first_refresh_killed_before_its_indexes(
    input_dir: Path, home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The documents' chunk vectors exist but nothing was published and the strategy indexes were
    never written (a first refresh killed): `ask` fails, so nothing is searchable."""
    assert main(["index", "--input", str(input_dir), "--home", str(home)]) == 0
    layout = HomeLayout.at(home)
    shutil.rmtree(layout.published)
    shutil.rmtree(layout.index_path(BM25_FOLDER))
    layout.refresh_pending.touch()
    out = _status(home, input_dir, capsys)
    assert "0 documents searchable, 3 parsed but not searchable" in out
    assert "a damaged index" in out and "bm25" in out


def test_index_reads_the_published_generation_once_and_repairs_it(
    input_dir: Path, home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The damage check loads every vector index of the generation (0.7 s warm at 12.6K
    passages): a no-op `index` ran it three times (its own check, the parsed-but-not-searchable
    count, the status it prints). Once, and a damaged generation is still rebuilt and reported
    whole afterwards."""
    from graphunified_assets.ops import home_status, indexing

    assert main(["index", "--input", str(input_dir), "--home", str(home)]) == 0
    checks: list[Path] = []

    def counted(layout: HomeLayout) -> str | None:
        checks.append(layout.home)
        return published_damage(layout)

    for module in (home_status, indexing):
        monkeypatch.setattr(module, "published_damage", counted)
    capsys.readouterr()
    assert main(["index", "--input", str(input_dir), "--home", str(home)]) == 0
    assert "nothing to refresh" in capsys.readouterr().out and len(checks) == 1
    shutil.rmtree(current(HomeLayout.at(home), rebuild_hint="").index_path(BM25_FOLDER))
    assert main(["index", "--input", str(input_dir), "--home", str(home)]) == 0
    out = capsys.readouterr().out
    assert "the global refresh rebuilds it" in out and "3 documents searchable, 0 parsed" in out
    assert published_damage(HomeLayout.at(home)) is None
