"""The token buckets on a fake clock: exact waits, no timing flakiness."""

from __future__ import annotations

from graphunified_query.core.providers.rate_limit import RateLimiter


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def _limiter(clock: FakeClock, rpm: int = 60, tpm: int = 10**9) -> RateLimiter:
    return RateLimiter(requests_per_minute=rpm, tokens_per_minute=tpm, clock=clock, sleep=clock.sleep)


def test_a_full_bucket_allows_a_burst_then_one_call_per_interval() -> None:
    clock = FakeClock()
    limiter = _limiter(clock, rpm=60)
    for _ in range(60):
        limiter.acquire(1)
    assert clock.slept == []
    limiter.acquire(1)
    assert clock.now == 1.0  # one request per second at 60 rpm


def test_tokens_per_minute_throttle_large_calls() -> None:
    clock = FakeClock()
    limiter = _limiter(clock, rpm=10**6, tpm=6000)  # 100 tokens per second
    limiter.acquire(6000)
    limiter.acquire(500)
    assert clock.now == 5.0


def test_a_call_larger_than_the_bucket_still_runs() -> None:
    clock = FakeClock()
    limiter = _limiter(clock, rpm=10**6, tpm=1000)
    limiter.acquire(50_000)
    assert clock.slept == []


def test_idle_time_refills_but_never_beyond_capacity() -> None:
    clock = FakeClock()
    limiter = _limiter(clock, rpm=60)
    for _ in range(60):
        limiter.acquire(1)
    clock.now += 3600  # an hour idle refills only up to the 60-call capacity
    for _ in range(60):
        limiter.acquire(1)
    assert clock.slept == []
    limiter.acquire(1)
    assert clock.slept == [1.0]
