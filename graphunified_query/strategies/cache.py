"""A retrieval cache any strategy can put in front of itself: same question, same answer, for a while.

Entries are keyed by (snapshot, strategy, query, params, top_k) and live ``ttl_seconds``. The
snapshot part is a token minted once per loaded `Snapshot` object (kept in its ``extras``), so a
reloaded index — a new object with new extras, even at a recycled address — never meets an old
entry, while an entry stays valid as long as its snapshot is the one searched: a snapshot's data
never changes after loading, whatever happens to the files behind it.
Calls whose params are not plain data (a reranker object, say) bypass the cache rather than risk
two different objects sharing a key.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any

from graphunified_query.snapshot.model import Snapshot
from graphunified_query.strategies.results import Retrieval

_TOKENS = "retrieval_cache.tokens"  # snapshot.extras key: id(snapshot) → token
CacheKey = tuple[str, str, str, str, int]


def snapshot_token(snapshot: Snapshot) -> str:
    """A token unique to this snapshot object for as long as it lives (by id as well, in case a
    copy made with `dataclasses.replace` shares its ``extras``)."""
    tokens: dict[int, str] = snapshot.extras.setdefault(_TOKENS, {})
    return tokens.setdefault(id(snapshot), uuid.uuid4().hex)


class RetrievalCache:
    """TTL + LRU cache of `Retrieval`s; thread-safe (async retrieval runs in worker threads)."""

    def __init__(
        self,
        ttl_seconds: float = 300.0,
        *,
        max_entries: int = 256,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.ttl_seconds = ttl_seconds
        self.max_entries = max_entries
        self.clock = clock
        self.hits = 0
        self.misses = 0
        self._entries: OrderedDict[CacheKey, tuple[float, Retrieval]] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    def get_or_compute(
        self,
        snapshot: Snapshot,
        strategy: str,
        query: str,
        top_k: int,
        params: Mapping[str, Any],
        compute: Callable[[], Retrieval],
    ) -> Retrieval:
        key = self._key(snapshot, strategy, query, top_k, params)
        if key is None or self.ttl_seconds <= 0:
            return compute()
        now = self.clock()
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None and now - entry[0] < self.ttl_seconds:
                self._entries.move_to_end(key)
                self.hits += 1
                return entry[1]
            self.misses += 1
        retrieval = compute()  # outside the lock: other queries need not wait for this one
        with self._lock:
            self._entries[key] = (now, retrieval)
            self._entries.move_to_end(key)
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)
        return retrieval

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    @staticmethod
    def _key(
        snapshot: Snapshot, strategy: str, query: str, top_k: int, params: Mapping[str, Any]
    ) -> CacheKey | None:
        try:
            frozen = json.dumps(params, sort_keys=True, allow_nan=True)
        except (TypeError, ValueError):
            return None  # not plain data: no safe key
        return snapshot_token(snapshot), strategy, query, frozen, top_k
