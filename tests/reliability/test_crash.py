"""SIGKILL `index` mid-extraction and mid-table-write; a re-run ends exactly where an uninterrupted
run does, with no half-written file visible and no answered LLM call sent again."""

from __future__ import annotations

from pathlib import Path

import pytest

from graphunified_query.snapshot.loader import load_snapshot
from tests.reliability.harness import (
    gated_server,
    kill_after_answers,
    make_corpus,
    rows_lost,
    run_index,
    start_index,
    table_contents,
    visible_leftovers,
    write_settings,
)

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_corpus(tmp_path_factory.mktemp("corpus"))


@pytest.fixture(scope="module")
def expected(corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[str]]:
    """The tables of an uninterrupted run."""
    home = tmp_path_factory.mktemp("uninterrupted") / "home"
    with gated_server() as server:
        write_settings(home, server)
        result = run_index(home, corpus)
    assert result.returncode == 0, result.stderr[-3000:]
    return table_contents(home)


def test_kill_during_extraction_resumes_without_repeating_answered_calls(
    corpus: Path, expected: dict[str, list[str]], tmp_path: Path
) -> None:
    home = tmp_path / "home"
    with gated_server(open_for=3) as server:
        write_settings(home, server)
        child = start_index(home, corpus)
        answered = set(server.answered[: kill_after_answers(child, server, home)])
        assert child.returncode == -9 and len(answered) == 3
        before = len(server.bodies)
        result = run_index(home, corpus)
        assert result.returncode == 0, result.stderr[-3000:]
        resent = [b for b in server.sent_bodies()[before:] if b in answered]
    assert resent == []  # only requests in flight at the kill are sent again
    assert "was stopped or killed" in result.stdout  # its Dagster run no longer blocks the queue
    assert rows_lost(expected, table_contents(home)) == 0
    assert table_contents(home) == expected
    assert visible_leftovers(home) == []
    assert load_snapshot(home).generation == 1


def test_kill_while_a_table_is_written_leaves_no_half_file_and_resumes(
    corpus: Path, expected: dict[str, list[str]], tmp_path: Path
) -> None:
    home, mark = tmp_path / "home", tmp_path / "killed-at"
    with gated_server() as server:
        write_settings(home, server)
        child = start_index(home, corpus, GU_KILL_ON_RENAME="entities", GU_KILL_MARK=str(mark))
        child.communicate(timeout=300)
        assert child.returncode == -9, "the child was not killed mid-write"
        staged = Path(mark.read_text())
        assert staged.exists() and staged.name.startswith(".")  # finished data, never renamed
        assert not (home / "tables" / "entities.parquet").exists()  # readers see no half table
        answered = set(server.sent_bodies())
        before = len(server.bodies)
        result = run_index(home, corpus)
        assert result.returncode == 0, result.stderr[-3000:]
        resent = [b for b in server.sent_bodies()[before:] if b in answered]
    assert resent == []
    assert "the last global refresh did not finish" in result.stdout
    assert not staged.exists() and visible_leftovers(home) == []
    assert table_contents(home) == expected
    assert load_snapshot(home).generation == 1
