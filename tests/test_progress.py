"""Progress on long work (#32 item 3): counts and an ETA, redrawn on a terminal, a line per tenth off it."""

from __future__ import annotations

import io
import re
from itertools import count
from pathlib import Path

import pytest

from graphunified_assets.defs.jobs import INDEX_DOCUMENTS, REFRESH_INDEXES
from graphunified_assets.defs.resources import GraphUnifiedResource
from graphunified_assets.ops.indexing import index
from graphunified_query.core.progress import Progress
from tests.conftest import SAMPLE_DOCS
from tests.fakes.voyage_server import FakeVoyageServer


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_off_a_terminal_a_line_per_tenth_with_counts_and_eta() -> None:
    stream, seconds = io.StringIO(), count()
    progress = Progress("eval", "runs", stream=stream, clock=lambda: float(next(seconds)))
    for done in range(1, 701):  # one second per run
        progress(done, 700, "naive")
    lines = stream.getvalue().splitlines()
    assert len(lines) == 10 and "\r" not in stream.getvalue()  # a 700-run eval wrote 700 bars
    assert lines[0] == "eval: 70/700 runs (1m10s elapsed, ETA 10m30s)"
    assert lines[-1] == "eval: 700/700 runs (11m40s elapsed)"


def test_on_a_terminal_one_line_redrawn() -> None:
    stream, seconds = Terminal(), count()
    progress = Progress("export-graphrag", "files", stream=stream, clock=lambda: float(next(seconds)))
    for done in range(1, 5):
        progress(done, 4, f"table{done}")
    written = stream.getvalue()
    assert written.count("\r") == 4 and written.count("\n") == 1 and written.endswith("\n")
    assert "1/4 files 1s elapsed, ETA 3s table1" in written and "4/4 files 4s elapsed" in written


def test_steps_of_several_units_still_write_each_tenth() -> None:
    """Embedding and extraction report after batches (32 of 200 chunks): every tenth crossed is a
    line, where ``done % (total // 10)`` wrote only 160/200 and 200/200."""
    stream, seconds = io.StringIO(), count()
    progress = Progress("chunks embedded", "chunks", stream=stream, clock=lambda: float(next(seconds)))
    for done in [*range(32, 200, 32), 200]:
        progress(done, 200)
    lines = stream.getvalue().splitlines()
    assert [line.split()[2] for line in lines] == [f"{d}/200" for d in (32, 64, 96, 128, 160, 192, 200)]


def test_index_says_how_far_each_run_and_its_long_steps_are(
    home: Path, input_dir: Path, voyage: FakeVoyageServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """`index` was silent for minutes inside a run: now the steps done of each run's steps, and
    the documents parsed, chunks embedded and chunks extracted, each with counts (off a terminal:
    plain lines)."""
    (home / "settings.yaml").write_text(
        f"embedding:\n  provider: voyage\n  voyage_base_url: {voyage.base_url}\n  batch_size: 2\n"
    )
    resource = GraphUnifiedResource(home=str(home), input_dir=str(input_dir), voyage_api_key="test-key")
    index(resource, echo=lambda _: None)
    written = capsys.readouterr().err
    documents = len(SAMPLE_DOCS)
    for line in (
        f"documents parsed: {documents}/{documents} documents",
        "chunks embedded: ",
        "chunks extracted: ",
    ):
        assert line in written, written[-3000:]
    for job in (INDEX_DOCUMENTS, REFRESH_INDEXES):
        steps = re.findall(rf"^{job}: (\d+)/(\d+) steps", written, flags=re.MULTILINE)
        assert steps and steps[-1][0] == steps[-1][1] and int(steps[-1][1]) > 3, (job, written[-3000:])
    assert "\r" not in written  # not a terminal: whole lines
