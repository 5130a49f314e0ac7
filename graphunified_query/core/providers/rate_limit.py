"""Requests- and tokens-per-minute limits shared by every thread of a process (None: no limit)."""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable


class RateLimiter:
    """Two token buckets refilled continuously; `acquire` blocks until both allow the call."""

    def __init__(
        self,
        *,
        requests_per_minute: int | None,
        tokens_per_minute: int | None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        # An unlimited bucket is infinitely full: it never makes a call wait.
        self._capacity = tuple(
            math.inf if v is None else float(v) for v in (requests_per_minute, tokens_per_minute)
        )
        self._available = list(self._capacity)
        self._clock = clock
        self._sleep = sleep
        self._stamp = clock()
        self._lock = threading.Lock()

    def acquire(self, tokens: int) -> None:
        if self._capacity == (math.inf, math.inf):
            return
        tokens = int(min(tokens, self._capacity[1]))  # one huge call must still be able to run
        while True:
            with self._lock:
                self._refill()
                if self._available[0] >= 1 and self._available[1] >= tokens:
                    self._available[0] -= 1
                    self._available[1] -= tokens
                    return
                wait = max(
                    (need - available) * 60 / capacity
                    for need, available, capacity in zip(
                        (1, tokens), self._available, self._capacity, strict=True
                    )
                    if capacity != math.inf
                )
            self._sleep(min(max(wait, 0.01), 5.0))

    def _refill(self) -> None:
        now = self._clock()
        elapsed = now - self._stamp
        self._stamp = now
        for i, capacity in enumerate(self._capacity):
            if capacity != math.inf:
                self._available[i] = min(capacity, self._available[i] + elapsed * capacity / 60)
