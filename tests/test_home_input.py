"""A home owns its input folder (#32 item 1): `index --home H` without --input used to index
./data/sample into H and remove H's own documents; the sensor (`make ui`) did the same."""

from __future__ import annotations

import shutil
from pathlib import Path

import dagster as dg
import pytest

from graphunified_assets.cli.main import main
from graphunified_assets.defs.resources import GraphUnifiedResource
from graphunified_assets.defs.sensors import new_documents_sensor
from graphunified_assets.lib.ingest.index_state import IndexState
from graphunified_assets.lib.ingest.sources import scan_input
from graphunified_query.core.home_input import InputRecordError, record_input, recorded_input
from graphunified_query.core.layout import HomeLayout, build_command


def _indexed(home: Path, input_dir: Path) -> dict[str, str]:
    """The home as an `index` of ``input_dir`` leaves it, as far as the guard looks (no Dagster run)."""
    hashes = {k: d.content_hash for k, d in scan_input(input_dir).documents.items()}
    IndexState(HomeLayout.at(home).index_state).mark_indexed(hashes)
    return hashes


@pytest.fixture
def other_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "other"
    folder.mkdir()
    (folder / "unrelated.md").write_text("# Unrelated\n\nSomething else entirely.\n", encoding="utf-8")
    return folder


@pytest.fixture
def sample_in_cwd(tmp_path: Path, other_folder: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The default storage.input_dir (data/sample) exists where the command runs, as in a clone."""
    cwd = tmp_path / "cwd"
    shutil.copytree(other_folder, cwd / "data" / "sample")
    monkeypatch.chdir(cwd)
    return cwd / "data" / "sample"


def test_the_recorded_folder_is_used_without_input(home: Path, input_dir: Path, sample_in_cwd: Path) -> None:
    layout = HomeLayout.at(home)
    record_input(layout, input_dir)
    assert recorded_input(layout) == input_dir.resolve()
    assert GraphUnifiedResource(home=str(home)).input_path == input_dir.resolve()
    # Inside the home it is stored relative, so a moved home (an eval home's input/) keeps it.
    record_input(layout, home / "input")
    assert '"input": "input"' in layout.input_record.read_text(encoding="utf-8")


def test_a_different_input_is_refused_with_the_count(
    home: Path, input_dir: Path, other_folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    indexed = _indexed(home, input_dir)
    record_input(HomeLayout.at(home), input_dir)
    assert main(["index", "--input", str(other_folder), "--home", str(home)]) == 2
    err = capsys.readouterr().err
    assert "would remove 3 of its 3 documents" in err and "--replace-input" in err
    assert "Traceback" not in err
    assert IndexState(HomeLayout.at(home).index_state).indexed_hashes() == indexed  # nothing removed
    assert recorded_input(HomeLayout.at(home)) == input_dir.resolve()


def test_storage_input_dir_in_settings_counts_as_asking(
    home: Path, input_dir: Path, other_folder: Path
) -> None:
    from graphunified_assets.ops.input_guard import input_problem

    _indexed(home, input_dir)
    record_input(HomeLayout.at(home), input_dir)
    (home / "settings.yaml").write_text(f"storage:\n  input_dir: {other_folder}\n", encoding="utf-8")
    problem = input_problem(GraphUnifiedResource(home=str(home)))
    assert problem is not None and "would remove 3 of its 3" in problem
    assert input_problem(GraphUnifiedResource(home=str(home)), replace=True) is None


def test_a_home_without_a_record_is_not_emptied_by_the_default_folder(
    home: Path, input_dir: Path, sample_in_cwd: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _indexed(home, input_dir)  # indexed before homes recorded their input
    assert main(["index", "--home", str(home)]) == 2
    err = capsys.readouterr().err
    assert "no recorded input folder" in err and "would remove 3 of them" in err
    assert not HomeLayout.at(home).input_record.exists()


def test_the_sensor_removes_nothing_from_another_folder(
    home: Path, input_dir: Path, other_folder: Path
) -> None:
    _indexed(home, input_dir)
    record_input(HomeLayout.at(home), input_dir)
    resource = GraphUnifiedResource(home=str(home), input_dir=str(other_folder))  # GRAPHUNIFIED_INPUT
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions("documents", sorted(scan_input(input_dir).documents))
        context = dg.build_sensor_context(instance=instance, resources={"graphunified": resource})
        result = new_documents_sensor(context)
        assert isinstance(result, dg.SensorResult)
        assert not result.run_requests and not result.dynamic_partitions_requests
        assert result.skip_reason is not None and "would remove 3 of its 3" in result.skip_reason.skip_message
        HomeLayout.at(home).input_record.write_text("[]", encoding="utf-8")  # damaged: said, nothing run
        result = new_documents_sensor(context)
        assert isinstance(result, dg.SensorResult) and not result.run_requests
        assert result.skip_reason is not None and "input.json is not" in result.skip_reason.skip_message


def test_the_sensors_first_tick_records_the_folder(home: Path, input_dir: Path) -> None:
    resource = GraphUnifiedResource(home=str(home), input_dir=str(input_dir))
    with dg.instance_for_test() as instance:
        context = dg.build_sensor_context(instance=instance, resources={"graphunified": resource})
        result = new_documents_sensor(context)
        assert isinstance(result, dg.SensorResult) and result.run_requests
    assert recorded_input(HomeLayout.at(home)) == input_dir.resolve()


def test_build_command_names_the_input_until_one_is_recorded(home: Path, input_dir: Path) -> None:
    assert build_command(home).endswith("--input YOUR_FOLDER")
    record_input(HomeLayout.at(home), input_dir)
    assert "--input" not in build_command(home)


def test_a_damaged_record_is_one_line(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    HomeLayout.at(home).input_record.write_text("{not json", encoding="utf-8")
    with pytest.raises(InputRecordError, match=r"input.json is not \{\"input\""):
        recorded_input(HomeLayout.at(home))
    assert main(["index", "--home", str(home)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "input.json is not" in err and "Traceback" not in err
    assert build_command(home).endswith("--input YOUR_FOLDER")  # a hint never raises


@pytest.mark.slow
def test_index_records_its_input_and_a_second_index_keeps_the_documents(
    home: Path, input_dir: Path, other_folder: Path, sample_in_cwd: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["index", "--input", str(input_dir), "--home", str(home)]) == 0
    assert recorded_input(HomeLayout.at(home)) == input_dir.resolve()
    capsys.readouterr()
    assert main(["index", "--home", str(home)]) == 0  # data/sample exists here: not taken
    out = capsys.readouterr().out
    assert "0 removed, 3 unchanged" in out
    assert main(["index", "--input", str(other_folder), "--home", str(home), "--replace-input"]) == 0
    assert recorded_input(HomeLayout.at(home)) == other_folder.resolve()
    assert sorted(IndexState(HomeLayout.at(home).index_state).indexed_hashes()) == ["unrelated.md"]


def test_eval_does_not_take_over_a_home_that_indexes_another_folder(
    home: Path, input_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from graphunified_query.cli import main as query_main

    _indexed(home, input_dir)
    record_input(HomeLayout.at(home), input_dir)
    tiny = Path(__file__).resolve().parent / "fixtures" / "eval_tiny"
    assert query_main(["eval", str(tiny), "--home", str(home)]) == 2
    err = capsys.readouterr().err
    assert f"indexes {input_dir.resolve()}" in err and "--replace-input" in err
    assert not (home / "input").exists()  # the corpus was not copied in


def test_ask_on_an_empty_home_names_the_input_to_index(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from graphunified_query.cli import main as query_main

    assert query_main(["ask", "Who founded the mill?", "--home", str(tmp_path)]) == 2
    assert f"index --home {tmp_path} --input YOUR_FOLDER" in capsys.readouterr().err


@pytest.mark.slow
def test_eval_shows_its_indexing_as_it_goes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """eval hid its indexing step's output (a silence of minutes); the lines now come as they are printed."""
    from graphunified_query.evaluation.dataset import load_dataset
    from graphunified_query.evaluation.home import ensure_index

    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    home = tmp_path / "eval-home"
    home.mkdir()
    (home / "settings.yaml").write_text("embedding:\n  provider: local\n", encoding="utf-8")
    lines: list[str] = []
    run = ensure_index(
        load_dataset(Path(__file__).resolve().parent / "fixtures" / "eval_tiny"), home, echo=lines.append
    )
    assert (
        any(line.startswith("done in") for line in lines) and "".join(f"{x}\n" for x in lines) == run.output
    )
    assert recorded_input(HomeLayout.at(home)) == (home / "input").resolve()  # eval's home owns its input


def test_a_folder_that_loses_nothing_is_taken_without_asking(
    home: Path, input_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A moved input folder, or a home whose first folder was empty: nothing would be removed."""
    from graphunified_assets.ops.input_guard import adopt_input, input_problem

    _indexed(home, input_dir)
    record_input(HomeLayout.at(home), tmp_path / "old-place")
    moved = shutil.copytree(input_dir, tmp_path / "moved")
    resource = GraphUnifiedResource(home=str(home), input_dir=str(moved))
    assert input_problem(resource) is None
    adopt_input(resource)
    assert recorded_input(HomeLayout.at(home)) == moved.resolve()
