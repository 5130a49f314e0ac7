"""Requests- and tokens-per-minute limits shared by every thread of a process."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


class RateLimiter:
    """Two token buckets refilled continuously; `acquire` blocks until both allow the call."""

    def __init__(
        self,
        *,
        requests_per_minute: int,
        tokens_per_minute: int,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._capacity = (float(requests_per_minute), float(tokens_per_minute))
        self._available = list(self._capacity)
        self._clock = clock
        self._sleep = sleep
        self._stamp = clock()
        self._lock = threading.Lock()

    def acquire(self, tokens: int) -> None:
        tokens = min(tokens, int(self._capacity[1]))  # one huge call must still be able to run
        while True:
            with self._lock:
                self._refill()
                if self._available[0] >= 1 and self._available[1] >= tokens:
                    self._available[0] -= 1
                    self._available[1] -= tokens
                    return
                wait = max(
                    (1 - self._available[0]) * 60 / self._capacity[0],
                    (tokens - self._available[1]) * 60 / self._capacity[1],
                )
            self._sleep(min(max(wait, 0.01), 5.0))

    def _refill(self) -> None:
        now = self._clock()
        elapsed = now - self._stamp
        self._stamp = now
        for i, capacity in enumerate(self._capacity):
            self._available[i] = min(capacity, self._available[i] + elapsed * capacity / 60)
