"""Token usage, dollars per call, the running total of a run, and the budget cap."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from graphunified_query.core.settings.model import ModelPrice


class BudgetExceeded(RuntimeError):
    """The next call would spend more than `llm.budget_usd`; nothing was sent."""


@dataclass(frozen=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
        )

    @property
    def total(self) -> int:
        """Every token billed: input, output and both kinds of cache traffic."""
        return self.input_tokens + self.output_tokens + self.cache_read_tokens + self.cache_write_tokens


def price_usd(usage: Usage, price: ModelPrice) -> float:
    return (
        usage.input_tokens * price.input
        + usage.output_tokens * price.output
        + usage.cache_read_tokens * price.cache_read
        + usage.cache_write_tokens * price.cache_write
    ) / 1_000_000


def estimate_cost(
    n_calls: int, input_tokens_per_call: int, output_tokens_per_call: int, price: ModelPrice
) -> float:
    """Upper-bound estimate before a run (no prompt-cache discount assumed)."""
    return price_usd(Usage(n_calls * input_tokens_per_call, n_calls * output_tokens_per_call), price)


class CostLedger:
    """Calls, tokens and dollars of one run; thread-safe; enforces the optional budget.

    Calls in flight hold their estimate (see `hold`), so parallel calls cannot together
    overshoot the budget between the check and the bill.
    """

    def __init__(self, *, budget_usd: float | None = None) -> None:
        self.budget_usd = budget_usd
        self.calls = 0
        self.cached_calls = 0
        self.usage = Usage()
        self.dollars = 0.0
        self._in_flight = 0.0
        self._lock = threading.Lock()

    def reserve(self, estimated_usd: float) -> None:
        """Raise `BudgetExceeded` if spending ``estimated_usd`` more could exceed the budget."""
        with self._lock:
            self._check(estimated_usd)

    @contextmanager
    def hold(self, estimated_usd: float) -> Iterator[None]:
        """`reserve`, and keep the estimate counted until the call is over (record it inside)."""
        with self._lock:
            self._check(estimated_usd)
            self._in_flight += estimated_usd
        try:
            yield
        finally:
            with self._lock:
                self._in_flight -= estimated_usd

    def record(self, usage: Usage, dollars: float, *, cached: bool) -> None:
        with self._lock:
            if cached:
                self.cached_calls += 1
                return
            self.calls += 1
            self.usage = self.usage + usage
            self.dollars += dollars

    def as_metadata(self) -> dict[str, float | int]:
        with self._lock:
            return {
                "llm_calls": self.calls,
                "llm_cached_calls": self.cached_calls,
                "input_tokens": self.usage.input_tokens,
                "output_tokens": self.usage.output_tokens,
                "cache_read_tokens": self.usage.cache_read_tokens,
                "cache_write_tokens": self.usage.cache_write_tokens,
                "cost_usd": round(self.dollars, 6),
            }

    def _check(self, estimated_usd: float) -> None:
        if self.budget_usd is None or self.dollars + self._in_flight + estimated_usd <= self.budget_usd:
            return
        in_flight = f" (+${self._in_flight:.4f} for calls in flight)" if self._in_flight else ""
        raise BudgetExceeded(
            f"Stopping before the budget is exceeded: spent ${self.dollars:.4f}{in_flight}, next call "
            f"estimated at up to ${estimated_usd:.4f}, llm.budget_usd is ${self.budget_usd:.2f}. "
            "Raise llm.budget_usd to go on; finished calls are cached and not paid for again."
        )
