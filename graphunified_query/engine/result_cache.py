"""The query path's result cache: the same request on the same generation, the same result.

One cache for every strategy (`query.cache`: ``enabled``, ``ttl_seconds``, ``max_entries``), in
front of retrieval, filters, expansion and packing (`query_path.run_path`); generation is not
cached here (the LLM cache answers a repeated prompt). An entry is keyed on

- the index: the published generation *and* a token minted once per loaded `Snapshot` object (kept
  in its ``extras``), so a reloaded index (a new object with new extras, even at a recycled
  address) never meets an old entry, while an entry stays valid as long as its snapshot is the one
  searched (a snapshot's data never changes after loading, whatever happens to the files behind it);
- the full request: strategy, question, ``top_k``, the strategy's parameters and every query
  setting of the call (risk and metadata filters, expansion, budget).

A request whose parameters are not plain data (a reranker object, say) bypasses the cache rather
than risk two different objects sharing a key. Entries live ``ttl_seconds``; at most
``max_entries`` are kept, the least recently used leaving first.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any, Generic, TypeVar

from graphunified_query.core.settings.query import ResultCacheSettings
from graphunified_query.snapshot.model import Snapshot

T = TypeVar("T")
_TOKENS = "result_cache.tokens"  # snapshot.extras key: id(snapshot) → token
CacheKey = tuple[str, int, str]


def snapshot_token(snapshot: Snapshot) -> str:
    """A token unique to this snapshot object for as long as it lives (by id as well, in case a
    copy made with `dataclasses.replace` shares its ``extras``)."""
    tokens: dict[int, str] = snapshot.extras.setdefault(_TOKENS, {})
    return tokens.setdefault(id(snapshot), uuid.uuid4().hex)


def request_key(snapshot: Snapshot, request: Mapping[str, Any]) -> CacheKey | None:
    """The key of ``request`` (plain data) on ``snapshot``; None when it is not plain data."""
    try:
        frozen = json.dumps(request, sort_keys=True, allow_nan=True)
    except (TypeError, ValueError):
        return None  # not plain data: no safe key
    return snapshot_token(snapshot), snapshot.generation, frozen


class ResultCache(Generic[T]):
    """TTL + LRU cache; thread-safe (the server and async retrieval run queries in threads)."""

    def __init__(
        self,
        ttl_seconds: float = 3600.0,
        *,
        enabled: bool = True,
        max_entries: int = 256,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.enabled = enabled and ttl_seconds > 0
        self.ttl_seconds = ttl_seconds
        self.max_entries = max_entries
        self.clock = clock
        self.hits = 0
        self.misses = 0
        self._entries: OrderedDict[CacheKey, tuple[float, T]] = OrderedDict()
        self._lock = threading.Lock()

    @classmethod
    def from_settings(cls, settings: ResultCacheSettings) -> ResultCache[T]:
        return cls(settings.ttl_seconds, enabled=settings.enabled, max_entries=settings.max_entries)

    def __len__(self) -> int:
        return len(self._entries)

    def get_or_compute(self, key: CacheKey | None, compute: Callable[[], T]) -> tuple[T, bool]:
        """The cached value of ``key`` if fresh, else ``compute()`` (kept); and whether it was a hit."""
        if key is None or not self.enabled:
            return compute(), False
        now = self.clock()
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None and now - entry[0] < self.ttl_seconds:
                self._entries.move_to_end(key)
                self.hits += 1
                return entry[1], True
            self.misses += 1
        value = compute()  # outside the lock: other queries need not wait for this one
        with self._lock:
            self._entries[key] = (now, value)
            self._entries.move_to_end(key)
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)
        return value, False

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
