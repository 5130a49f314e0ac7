"""Progress people can see on long work (eval's runs, an export's files): counts and an ETA.

On a terminal one line is redrawn in place; off a terminal (CI, a log file) a line is written per
tenth of the work, not per step (a 700-run eval wrote 700 bars into its log), and after a step
that ends 30 s or more after the last line. Both say how much
is done of how much, the time so far and the estimated time left (the mean step so far times
the steps left).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TextIO

WIDTH = 30  # characters of the bar
EVERY = 30.0  # seconds: off a terminal, a step finishing this long after the last line writes one


class Progress:
    """``progress(done, total, label)`` after each step of ``what`` (counted in ``unit``)."""

    def __init__(
        self,
        what: str,
        unit: str,
        *,
        stream: TextIO | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.what, self.unit, self.clock = what, unit, clock
        self.stream = stream if stream is not None else sys.stderr
        self.started = clock()
        self.tenth = 0  # the last tenth of the work written (off a terminal)
        self.written = 0.0  # seconds into the work when that line was written

    def __call__(self, done: int, total: int, label: str = "") -> None:
        elapsed = self.clock() - self.started
        left = elapsed / done * (total - done) if done else 0.0
        timing = f"{_seconds(elapsed)} elapsed" + (f", ETA {_seconds(left)}" if done < total else "")
        if not self.stream.isatty():
            # The tenth reached, not done % (total // 10): steps of several units (a batch of
            # chunks) would skip most multiples of it.
            # And after EVERY seconds without a line, when steps are long but tenths far apart.
            tenth = done * 10 // total if total else 10
            if done == total or tenth > self.tenth or elapsed - self.written >= EVERY:
                self.stream.write(f"{self.what}: {done}/{total} {self.unit} ({timing})\n")
                self.stream.flush()
                self.written = elapsed
            self.tenth = tenth
            return
        filled = int(WIDTH * done / total) if total else WIDTH
        bar = f"[{'#' * filled}{'.' * (WIDTH - filled)}]"
        self.stream.write(f"\r{self.what} {bar} {done}/{total} {self.unit} {timing} {label:<16}")
        if done == total:
            self.stream.write("\n")
        self.stream.flush()


def _seconds(value: float) -> str:
    minutes, seconds = divmod(round(value), 60)
    return f"{minutes}m{seconds:02d}s" if minutes else f"{seconds}s"
