"""Careless input to the CLI is one line naming the file or setting and what to do, never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from graphunified_assets.cli import main
from graphunified_query.settings import SettingsError, load_settings


def _error(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.startswith("error: ")
    return err


def test_a_settings_file_that_is_not_utf8_or_is_a_folder(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (home / "settings.yaml").write_bytes(b"chunking:\n  size: 300 # caf\xe9\n")
    assert "settings.yaml is not valid UTF-8 (byte 27); save it as UTF-8" in _error(
        ["status", "--home", str(home)], capsys
    )
    (home / "settings.yaml").unlink()
    (home / "settings.yaml").mkdir()
    assert "settings.yaml is a folder" in _error(["status", "--home", str(home)], capsys)


def test_home_that_is_a_file_and_argv_that_is_not_utf8(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "file").write_text("x")
    assert "is a file; pass a folder" in _error(["status", "--home", str(tmp_path / "file")], capsys)
    assert "is not valid UTF-8; rename it" in _error(
        ["status", "--home", str(tmp_path / "caf\udce9")], capsys
    )


def test_export_onto_an_existing_file(home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "out.parquet").write_text("x")
    err = _error(["export-graphrag", str(tmp_path / "out.parquet"), "--home", str(home)], capsys)
    assert "out.parquet is a file; pass a folder" in err


def test_chunk_size_has_an_upper_bound(tmp_path: Path) -> None:
    (tmp_path / "settings.yaml").write_text("chunking:\n  size: 100000\n")
    with pytest.raises(SettingsError, match=r"chunking\.size"):
        load_settings(tmp_path)
