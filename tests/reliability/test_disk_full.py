"""A full disk: every command ends in one line naming the home and what to do, `status` still
reports (it used to crash opening its state), and nothing readers load is touched.

It used to end `index` in an 87-98-line traceback: the error surfaced wherever the write was,
bare (`OSError` recording the input folder), or wrapped by SQLAlchemy inside a Dagster run.
"""

from __future__ import annotations

import errno
import sqlite3
from pathlib import Path

import pytest
import sqlalchemy.exc

from graphunified.cli import main
from graphunified_assets.lib.ingest.index_state import IndexState
from graphunified_query.core.stores.errors import storage_problem
from tests.fakes.full_disk import full_disk


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    with full_disk():
        code = main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


@pytest.fixture
def indexed_home(home: Path, input_dir: Path) -> Path:
    """A home whose state records the input's documents (no Dagster run needed for `status`)."""
    state = IndexState(home / "state.sqlite")
    state.mark_indexed({"mill.md": "x"})
    state.record_failures("parse", [("flood.txt", "binary content; fix or remove the file")])
    (home / "input.json").write_text(f'{{"version": 1, "input": "{input_dir}"}}\n', encoding="utf-8")
    return home


def test_status_on_a_full_disk_reports_and_names_the_disk(
    indexed_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = (indexed_home / "state.sqlite").read_bytes()
    code, out, err = _run(capsys, "status", "--home", str(indexed_home))
    assert code == 0, err
    assert "1 failed" in out and "failed [parse] flood.txt: binary content" in out
    assert f"cannot write a SQLite file under {indexed_home}" in out and "free space" in out
    assert (indexed_home / "state.sqlite").read_bytes() == before


def test_index_on_a_full_disk_is_one_line_naming_the_home(
    indexed_home: Path, input_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (input_dir / "new.md").write_text("# New\n\nA new document.\n", encoding="utf-8")
    code, _, err = _run(capsys, "index", "--home", str(indexed_home), "--input", str(input_dir))
    assert code == 1
    [line] = err.strip().splitlines()
    assert line.startswith(f"error: cannot write {indexed_home}") and "then run it again" in line


def test_a_refused_write_is_found_under_the_wrappers_that_carry_it(tmp_path: Path) -> None:
    """Inside a Dagster run SQLite's error arrives wrapped by SQLAlchemy (`raise ... from`)."""
    try:
        try:
            raise sqlite3.OperationalError("database or disk is full")
        except sqlite3.OperationalError as inner:
            inner.sqlite_errorcode = 13  # SQLITE_FULL, as SQLite sets it
            raise sqlalchemy.exc.OperationalError("insert", {}, inner) from inner
    except sqlalchemy.exc.OperationalError as wrapped:
        problem = storage_problem(wrapped, tmp_path)
    assert problem is not None and f"under {tmp_path}" in problem and "free on its disk" in problem
    full = OSError(errno.ENOSPC, "No space left on device", str(tmp_path / "x.parquet"))
    assert storage_problem(RuntimeError("run failed"), tmp_path) is None
    assert storage_problem(full, tmp_path) == (
        f"cannot write {tmp_path / 'x.parquet'} (No space left on device); free space on its disk, "
        "then run it again"
    )
