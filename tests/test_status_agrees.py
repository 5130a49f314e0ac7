"""`status` and `index` agree (#33 item 7), and `status` names runs that hold the home (#34 item 1).

Before: after a document run with no refresh after it (a sensor run), `status` said "1 parsed
but not searchable" while `index` said "nothing to refresh", and only `index --refresh` repaired
it; a run left queued or started by a killed `dagster dev` made `index` refuse while `status`
said nothing about it.
"""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest

from graphunified_assets.cli.main import main
from graphunified_assets.defs.jobs import REFRESH_INDEXES
from graphunified_assets.defs.resources import GraphUnifiedResource
from graphunified_assets.ops import indexing


def _status(home: Path, input_dir: Path, capsys: pytest.CaptureFixture[str]) -> str:
    capsys.readouterr()
    assert main(["status", "--home", str(home), "--input", str(input_dir)]) == 0
    return capsys.readouterr().out


def test_documents_parsed_but_not_searchable_make_index_refresh(
    input_dir: Path, home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert main(["index", "--input", str(input_dir), "--home", str(home)]) == 0
    (input_dir / "new.md").write_text(
        "# New\n\nThe Harrow Valley Railway opened in 1871.\n", encoding="utf-8"
    )
    real = indexing._runner

    def documents_only(*args: object, **kwargs: object):  # type: ignore[no-untyped-def]
        run = real(*args, **kwargs)  # type: ignore[arg-type]
        return lambda job, tags: "no refresh" if job == REFRESH_INDEXES else run(job, tags)

    with monkeypatch.context() as patch:  # a document run with no refresh after it, as a sensor's
        patch.setattr(indexing, "_runner", documents_only)
        assert main(["index", "--input", str(input_dir), "--home", str(home)]) == 0
    out = _status(home, input_dir, capsys)
    assert "3 documents searchable, 1 parsed but not searchable" in out
    assert "then the global refresh" in out  # not "nothing to refresh"

    capsys.readouterr()
    assert main(["index", "--input", str(input_dir), "--home", str(home)]) == 0
    assert "1 parsed but not searchable; the global refresh makes them searchable" in capsys.readouterr().out
    assert "4 documents searchable, 0 parsed but not searchable" in _status(home, input_dir, capsys)


def test_status_names_unfinished_runs_and_what_index_does_with_them(
    input_dir: Path, home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    instance = indexing.prepare_instance(GraphUnifiedResource(home=str(home), input_dir=str(input_dir)))
    waiting = instance.add_run(
        dg.DagsterRun(job_name="index_documents", status=dg.DagsterRunStatus.NOT_STARTED)
    )
    running = instance.add_run(dg.DagsterRun(job_name="refresh_indexes", status=dg.DagsterRunStatus.STARTED))
    out = _status(home, input_dir, capsys)
    assert f"Dagster run {waiting.run_id} (index_documents) is queued" in out
    assert f"Dagster run {running.run_id} (refresh_indexes) is started" in out
    assert "terminate it in the Dagster UI" in out
