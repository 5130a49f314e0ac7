"""Progress on long work (#32 item 3): counts and an ETA, redrawn on a terminal, a line per tenth off it."""

from __future__ import annotations

import io
import logging
import re
from itertools import count
from pathlib import Path

import pytest

from graphunified_assets.defs.jobs import INDEX_DOCUMENTS, REFRESH_INDEXES
from graphunified_assets.defs.resources import GraphUnifiedResource
from graphunified_assets.ops.index_progress import embed_in_tenths, work_progress
from graphunified_assets.ops.indexing import index
from graphunified_query.core.progress import Progress
from graphunified_query.core.settings.model import LoggingSettings
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
    assert "\r" not in stream.getvalue()  # a 700-run eval wrote 700 bars
    written = [int(line.split()[1].split("/")[0]) for line in lines]
    # Each tenth, and a line whenever 30 s passed without one (a second per run here).
    assert {70 * k for k in range(1, 11)} <= set(written)
    assert all(b - a <= 30 for a, b in zip([0, *written], written, strict=False))
    assert len(lines) <= 700 // 30 + 10
    assert "eval: 70/700 runs (1m10s elapsed, ETA 10m30s)" in lines
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


def test_a_steps_texts_are_embedded_in_tenths_of_their_characters() -> None:
    """The graph and report texts went to the model in one call (a 515 s silence on 200 passages):
    now in calls of about a tenth of their characters each, shortest first, a line after each."""
    texts = ["x" * n for n in range(1, 2001)] + ["x"]  # a repeat is embedded once
    calls: list[list[str]] = []
    stream = io.StringIO()
    embed_in_tenths(calls.append, texts, Progress("graph texts embedded", "texts", stream=stream))
    assert [t for call in calls for t in call] == sorted(set(texts), key=len)
    assert len(calls) == 10 and all(len(call) >= 64 for call in calls)
    sizes = [sum(map(len, call)) for call in calls]
    assert max(sizes) < 1.1 * sum(sizes) / 10  # even in characters, not in texts
    lines = stream.getvalue().splitlines()
    assert len(lines) >= 5 and lines[-1].startswith("graph texts embedded: 2000/2000 texts")


def test_off_a_terminal_a_long_step_writes_a_line_even_within_a_tenth() -> None:
    stream, seconds = io.StringIO(), iter([0.0, 5.0, 40.0, 45.0])
    progress = Progress("graph texts embedded", "texts", stream=stream, clock=lambda: next(seconds))
    for done in (1, 2, 3):  # of 100: no tenth crossed; the second step ends 40 s in
        progress(done, 100)
    assert stream.getvalue().splitlines() == ["graph texts embedded: 2/100 texts (40s elapsed, ETA 32m40s)"]


def test_with_json_logs_each_progress_line_is_a_log_record(caplog: pytest.LogCaptureFixture) -> None:
    """`logging.format: json` promises one JSON object per line: progress goes through logging."""
    caplog.set_level(logging.INFO, logger="graphunified.progress")
    progress = work_progress(LoggingSettings(format="json"), "chunks embedded", "chunks")
    progress(10, 10)
    assert [r.getMessage().split(" (")[0] for r in caplog.records] == ["chunks embedded: 10/10 chunks"]
    assert not progress.stream.isatty()
