"""What the embedding model computed, counted where it batches: texts, real and padded tokens.

The local embedders add each batch they run to the process's `METER`, under the scope the
composition root names (the pipeline names each Dagster step; `graphunified_assets/defs/
observability.py` reports a step's usage in its metadata). Nothing here imports Dagster: the
scope is asked of a callable the pipeline installs with `set_scope`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass

OUTSIDE = ""  # the scope of batches run where no scope is set (queries, benches)


@dataclass
class EmbeddingUsage:
    texts: int = 0
    tokens: int = 0  # real tokens (attention mask ones), [CLS]/[SEP] included
    padded_tokens: int = 0  # what the model computed: batch rows x the batch's longest text
    batches: int = 0

    def add(self, other: EmbeddingUsage) -> None:
        self.texts += other.texts
        self.tokens += other.tokens
        self.padded_tokens += other.padded_tokens
        self.batches += other.batches

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


class UsageMeter:
    """Usage per scope, summed over every embedder of the process; safe across threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._usage: dict[str, EmbeddingUsage] = {}
        self._scope: Callable[[], str] = lambda: OUTSIDE

    def set_scope(self, scope: Callable[[], str]) -> Callable[[], str]:
        """``scope()`` names where a batch runs (asked once per embed call); returns the one it
        replaces, so a caller that scopes for a while can put it back."""
        previous, self._scope = self._scope, scope
        return previous

    def scope(self) -> str:
        try:
            return self._scope()
        except Exception:  # a scope that cannot be told must never fail an embedding
            return OUTSIDE

    def record(self, scope: str, usage: EmbeddingUsage) -> None:
        with self._lock:
            self._usage.setdefault(scope, EmbeddingUsage()).add(usage)

    def take(self, scope: str) -> EmbeddingUsage:
        """``scope``'s usage so far, forgotten here (each step reports its own once)."""
        with self._lock:
            return self._usage.pop(scope, EmbeddingUsage())

    def peek(self, scope: str) -> EmbeddingUsage:
        with self._lock:
            found = self._usage.get(scope, EmbeddingUsage())
            return EmbeddingUsage(**asdict(found))


METER = UsageMeter()
