"""`index` reads only the derived files that changed since the last `index` that finished.

Before, every `index` read every cache in full (`pragma quick_check`) and both ends of every
Parquet file: at 12.6K passages a no-op `index` took 45 s from a cold disk, 38 of them checking.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from graphunified_assets.defs.resources import GraphUnifiedResource
from graphunified_assets.ops.indexing import index
from graphunified_assets.ops.store_check import check_store, checked_files
from graphunified_assets.ops.verified_files import SQLITE_SUFFIX, VerifiedFiles, fingerprint, record_verified
from graphunified_query.core.artifacts import CHUNKS, DOCUMENTS
from graphunified_query.core.layout import HomeLayout
from tests.reliability.test_corrupt_store import built as built
from tests.reliability.test_corrupt_store import home as home

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def _index(home: Path, input_dir: Path, echo: Callable[[str], None] | None = None) -> list[str]:
    lines: list[str] = []

    def say(line: str) -> None:
        lines.append(line)
        if echo is not None:
            echo(line)

    index(GraphUnifiedResource(home=str(home), input_dir=str(input_dir)), echo=say)
    return lines


def _damage_unseen(path: Path, offset: int, data: bytes) -> Path:
    """Overwrite bytes in place and put the modification time back: damage no fingerprint shows
    (a disk error inside a page)."""
    before = path.stat()
    with path.open("r+b") as handle:
        handle.seek(offset)
        handle.write(data)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    return path


def _sqlite_page(home: Path) -> Path:
    path = HomeLayout.at(home).embedding_cache
    return _damage_unseen(path, 4096, os.urandom(4096))  # the second page: a b-tree page


def _parquet_tail(home: Path) -> Path:
    path = sorted(HomeLayout.at(home).partition_dir(DOCUMENTS).glob("*.parquet"))[0]
    return _damage_unseen(path, path.stat().st_size - 4, b"XXXX")  # the trailing magic bytes


DAMAGE: dict[str, Callable[[Path], Path]] = {"sqlite page": _sqlite_page, "parquet tail": _parquet_tail}


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_index_checks_a_file_again_only_once_it_changed(
    home: Path, built: tuple[Path, Path], damage: str
) -> None:
    _index(home, built[1])  # the copy's files are new to its record (other inodes): all checked
    path = DAMAGE[damage](home)

    lines = _index(home, built[1])
    assert not [line for line in lines if "damaged" in line], lines  # as recorded: not read again
    assert path.exists()

    os.utime(path)  # any write changes the modification time
    lines = _index(home, built[1])
    assert [line for line in lines if "damaged" in line and path.name in line], lines
    if path.exists():
        os.utime(path)  # checked once more, now whole
    assert not [line for line in _index(home, built[1]) if "damaged" in line]  # repaired


def test_an_index_that_stops_after_its_check_leaves_no_record(home: Path, built: tuple[Path, Path]) -> None:
    _index(home, built[1])
    path = _sqlite_page(home)

    def stop(line: str) -> None:
        if line.startswith("loading the embedding model"):
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        _index(home, built[1], echo=stop)
    assert not HomeLayout.at(home).verified_files.exists()
    # A run that met the damage would have failed the same way: the next `index` checks everything.
    lines = _index(home, built[1])
    assert [line for line in lines if "was damaged" in line and str(path) in line], lines


def test_a_record_that_cannot_be_read_means_checking_everything(tmp_path: Path) -> None:
    layout = HomeLayout.at(tmp_path)
    data = layout.cache / "file.parquet"
    data.parent.mkdir(parents=True)
    data.write_bytes(b"PAR1....PAR1")
    record_verified(layout, [data, layout.cache / "missing.parquet"])
    assert VerifiedFiles.take(layout).unchanged(data)
    assert not layout.verified_files.exists()  # taken away

    record_verified(layout, [data])
    layout.verified_files.write_bytes(layout.verified_files.read_bytes()[:10])  # torn
    assert not VerifiedFiles.take(layout).unchanged(data)

    record_verified(layout, [data])
    data.write_bytes(b"PAR1....PAR1")  # rewritten: same size and bytes, a later time
    assert fingerprint(data) is not None
    assert not VerifiedFiles.take(layout).unchanged(data)


def test_every_sqlite_file_is_fingerprinted_with_its_write_ahead_log(tmp_path: Path) -> None:
    """Only SQLite files have a log to look for (a stat per Parquet file saved): each of the home's
    must be told by its suffix, and a write still in its log changes its fingerprint."""
    layout = HomeLayout.at(tmp_path)
    assert {path.suffix for path in layout.sqlite_files} == {SQLITE_SUFFIX}
    path = layout.embedding_cache
    path.parent.mkdir(parents=True)
    db = sqlite3.connect(path)
    db.execute("pragma journal_mode=wal")
    db.execute("pragma wal_autocheckpoint=0")  # the writes stay in the log
    db.execute("create table t (x)")
    db.commit()
    before = fingerprint(path)
    db.execute("insert into t values (1)")
    db.commit()
    assert before is not None and before[3] is not None  # the log's size is part of it
    assert fingerprint(path) != before and path.stat().st_size == before[0]
    db.close()


def test_a_file_is_recorded_as_it_was_checked_and_one_written_since_is_checked_again(tmp_path: Path) -> None:
    layout = HomeLayout.at(tmp_path)
    kept, written = (layout.partition_dir(DOCUMENTS) / name for name in ("kept.parquet", "written.parquet"))
    table = layout.tables / "entities.parquet"
    for path in (kept, written, table):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"PAR1....PAR1")
    record_verified(layout, [kept, written, table])
    verified = VerifiedFiles.take(layout)
    assert all(verified.unchanged(path) for path in (kept, written, table))  # the check of an `index`
    checked = verified.as_checked({"written.parquet"})
    assert set(checked) == {str(kept.relative_to(tmp_path))}  # its documents' files and globals: not
    for path in (written, table, kept):  # the run writes them anew (a rename: another inode)
        staged = path.with_name("staged")
        staged.write_bytes(b"PAR1....PAR1..")
        staged.replace(path)
    record_verified(layout, [kept, written, table], checked)
    after = VerifiedFiles.take(layout)
    assert after.unchanged(written) and after.unchanged(table)  # taken after the run
    assert not after.unchanged(kept)  # recorded as checked: changed since, so checked again


def test_the_update_plan_reads_the_times_the_check_took_of_every_file(tmp_path: Path) -> None:
    """What the check saw of each per-document file is what listing the folders would give, but
    the damaged files the check removed."""
    layout = HomeLayout.at(tmp_path)
    for table in (DOCUMENTS, CHUNKS):
        for name in ("a", "b", "c"):
            path = layout.partition_path(table, name)
            path.parent.mkdir(parents=True, exist_ok=True)
            pq.write_table(pa.table({"x": [1]}), path)
    damaged = layout.partition_path(CHUNKS, "b")
    damaged.write_bytes(b"not parquet")
    verified = VerifiedFiles.take(layout)
    check = check_store(layout, (DOCUMENTS, CHUNKS), verified)
    assert check.damaged_documents == [damaged]
    for table in (DOCUMENTS, CHUNKS):
        listed = {name: found.st_mtime_ns for name, found in layout.partition_stats(table).items()}
        assert verified.table_times(table) == listed
    assert damaged.name not in verified.table_times(CHUNKS)
    # The record a finished `index` writes (its run rewrote document c's file) gives the status it
    # prints next the times a listing would.
    rewritten = layout.partition_path(DOCUMENTS, "c")
    os.utime(rewritten, ns=(rewritten.stat().st_atime_ns, rewritten.stat().st_mtime_ns + 10**9))
    files = checked_files(layout, (DOCUMENTS, CHUNKS))
    recorded = record_verified(layout, files, verified.as_checked({rewritten.name}))
    for table in (DOCUMENTS, CHUNKS):
        listed = {name: found.st_mtime_ns for name, found in layout.partition_stats(table).items()}
        assert recorded.table_times(table) == listed
