"""Progress on long work (#32 item 3): counts and an ETA, redrawn on a terminal, a line per tenth off it."""

from __future__ import annotations

import io
from itertools import count

from graphunified_query.core.progress import Progress


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
