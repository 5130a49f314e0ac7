"""Two rebuilds of one home never run at once; a reader during a rebuild gets the old
generation or the new one, never a mix."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from graphunified_assets.cli import main as index_cli
from graphunified_assets.defs.resources import GraphUnifiedResource
from graphunified_assets.ops.home_lock import HomeLocked
from graphunified_assets.ops.indexing import index, prepare_instance
from graphunified_query.snapshot.loader import load_snapshot
from tests.reliability.harness import ROOT, child_env, gated_server, make_corpus, start_index, write_settings

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    return make_corpus(tmp_path / "corpus")


@pytest.fixture(autouse=True)
def _restore_dagster_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "unused"))  # `index` repoints it
    yield


def test_a_second_index_is_refused_naming_the_first(
    corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "home"
    with gated_server(open_for=0) as server:  # holds the first index mid-extraction
        write_settings(home, server)
        first = start_index(home, corpus)
        assert server.reached.wait(240)
        with pytest.raises(HomeLocked, match=f"pid {first.pid}") as refused:
            index(GraphUnifiedResource(home=str(home), input_dir=str(corpus)), echo=lambda _: None)
        assert "Wait for it to finish" in str(refused.value) and "index --home" in str(refused.value)
        code = index_cli.main(["index", "--home", str(home), "--input", str(corpus)])
        err = capsys.readouterr().err
        assert code == 1 and f"pid {first.pid}" in err and "Traceback" not in err
        server.release()
        _, stderr = first.communicate(timeout=300)
    assert first.returncode == 0, stderr[-3000:]  # the first was not disturbed
    assert load_snapshot(home).generation == 1


def test_index_refuses_while_a_dagster_ui_run_of_the_home_is_in_progress(
    corpus: Path, tmp_path: Path
) -> None:
    resource = GraphUnifiedResource(home=str(tmp_path / "home"), input_dir=str(corpus))
    instance = prepare_instance(resource)
    run_id = str(uuid.uuid4())
    instance.add_run(
        dg.DagsterRun(job_name="refresh_indexes", run_id=run_id, status=dg.DagsterRunStatus.STARTED)
    )
    with pytest.raises(HomeLocked, match=run_id) as refused:
        index(resource, echo=lambda _: None)
    assert "terminate it in the Dagster UI" in str(refused.value)
    assert not (tmp_path / "home" / "tables").exists()  # refused before touching anything


def test_the_run_queue_allows_one_run_per_home(tmp_path: Path) -> None:
    instance = prepare_instance(GraphUnifiedResource(home=str(tmp_path / "home")))
    assert instance.get_concurrency_config().run_queue_config.max_concurrent_runs == 1


def _signature(home: Path) -> tuple[Any, ...]:
    snapshot = load_snapshot(home)
    return (
        snapshot.generation,
        tuple(sorted(snapshot.chunks.texts)),
        tuple(sorted(e["title"] for e in snapshot.entities)),
        tuple(sorted(snapshot.bm25.ids)),
        tuple(sorted(snapshot.graph.node_ids)),
        tuple(sorted(r["id"] for r in snapshot.reports)),
    )


def test_readers_during_a_rebuild_see_the_old_or_the_new_generation(corpus: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    index(GraphUnifiedResource(home=str(home), input_dir=str(corpus)), echo=lambda _: None)
    old = _signature(home)
    (corpus / "mill.md").write_text("# Hale Mill\n\nThe Hale Mill burned down in 1901 near Millbrook.\n")
    (corpus / "flood.txt").unlink()
    env = {k: v for k, v in child_env(home).items() if k != "ANTHROPIC_API_KEY"}  # offline rebuild
    rebuild = subprocess.Popen(
        [sys.executable, "-m", "graphunified_assets", "index", "--home", str(home), "--input", str(corpus)],
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    seen = []
    while rebuild.poll() is None:
        seen.append(_signature(home))
    assert rebuild.returncode == 0, rebuild.stderr.read()[-3000:] if rebuild.stderr else ""
    new = _signature(home)
    assert new[0] == old[0] + 1 and new[1:] != old[1:]
    assert set(seen) <= {old, new}, "a reader saw a mix of two generations"
    assert len(seen) > 5 and old in seen  # readers kept reading the old one meanwhile
    assert os.path.isdir(home / "published" / str(old[0]))  # kept for readers still on it
