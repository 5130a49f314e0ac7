"""Content-addressed LLM response cache: a re-run or a resumed run repeats no call.

The key is the SHA-256 of the canonical JSON of everything that shapes the answer (model,
system, messages, tools, parameters). Each response is committed as soon as it arrives, so a
crash loses at most the calls in flight.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from pathlib import Path
from typing import Any

_SCHEMA = "create table if not exists responses (key text primary key, response text not null)"


def request_key(request: dict[str, Any]) -> str:
    canonical = json.dumps(request, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class LLMCache:
    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(path, timeout=60, check_same_thread=False)
        self._db.execute("pragma journal_mode=wal")
        self._db.execute(_SCHEMA)
        self._db.commit()
        self._lock = threading.Lock()

    def get(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            row = self._db.execute("select response from responses where key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else None

    def put(self, key: str, response: dict[str, Any]) -> None:
        with self._lock, self._db:
            self._db.execute("insert or replace into responses values (?, ?)", (key, json.dumps(response)))
