"""An LLMCache that counts its reads and writes: a test of how often a step touches SQLite."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from graphunified_query.core.providers.llm_cache import LLMCache


class CountingCache(LLMCache):
    """An LLMCache that counts its reads and writes (each write is a transaction, an fsync)."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.writes: list[int] = []
        self.reads = 0

    def get(self, key: str) -> dict[str, Any] | None:
        self.reads += 1
        return super().get(key)

    def get_many(self, keys: list[str]) -> dict[str, dict[str, Any]]:
        self.reads += 1
        return super().get_many(keys)

    def put(self, key: str, response: dict[str, Any]) -> None:
        self.writes.append(1)
        super().put(key, response)

    def put_many(self, items: dict[str, dict[str, Any]]) -> None:
        self.writes.append(len(items))
        super().put_many(items)
