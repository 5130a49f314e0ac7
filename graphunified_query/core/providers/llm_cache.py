"""Content-addressed LLM response cache: a re-run or a resumed run repeats no call.

The key is the SHA-256 of the canonical JSON of the whole request (model, system, messages,
tools, tool_choice, max_tokens, temperature and any other parameter), never of credentials.
SQLite in WAL mode lets several processes share one file; each response is committed as soon
as it arrives, so a crash loses at most the calls in flight.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from graphunified_query.core.stores.sqlite_files import open_rebuildable
from graphunified_query.core.stores.sqlite_journal import set_journal_mode

_SCHEMA = "create table if not exists responses (key text primary key, response text not null)"
_KEYS_PER_QUERY = 500  # stay under SQLite's bound-variable limit
_BUSY_TIMEOUT_SECONDS = 60.0  # another process writing: wait for its lock rather than fail


def _setup(db: sqlite3.Connection) -> None:
    set_journal_mode(db)  # WAL, but not on a network filesystem
    # A deleted response (a removed document's) is zeroed, not left in free pages.
    db.execute("pragma secure_delete=on")
    db.execute(_SCHEMA)
    db.commit()


def request_key(request: dict[str, Any]) -> str:
    """Same request, same key: keys sorted, no whitespace, Unicode kept as is."""
    canonical = json.dumps(request, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class LLMCache:
    """`get`/`put` of response JSON (content, stop reason, usage) by request key; thread-safe."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()  # one connection shared by the threads of this process
        # A damaged file is moved aside and started afresh: every entry can be asked again.
        self._db, _ = open_rebuildable(
            self.path, _setup, timeout=_BUSY_TIMEOUT_SECONDS, check_same_thread=False
        )

    def get(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            row = self._db.execute("select response from responses where key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else None

    def put(self, key: str, response: dict[str, Any]) -> None:
        data = json.dumps(response, ensure_ascii=False)
        with self._lock, self._db:  # the connection as context manager commits this one row
            self._db.execute("insert or replace into responses values (?, ?)", (key, data))

    def get_many(self, keys: list[str]) -> dict[str, dict[str, Any]]:
        """The stored responses of ``keys`` (those it has), one query per 500 keys."""
        found: dict[str, dict[str, Any]] = {}
        with self._lock:
            for start in range(0, len(keys), _KEYS_PER_QUERY):
                part = keys[start : start + _KEYS_PER_QUERY]
                marks = ",".join("?" * len(part))
                rows = self._db.execute(f"select key, response from responses where key in ({marks})", part)
                found.update((key, json.loads(data)) for key, data in rows)
        return found

    def put_many(self, items: dict[str, dict[str, Any]]) -> None:
        """Stores every item in one transaction: a commit per row (an fsync each) cost the graph
        stage's keyword phrases ~4 ms a row, 22 s of a cold MuSiQue build."""
        rows = [(key, json.dumps(response, ensure_ascii=False)) for key, response in items.items()]
        with self._lock, self._db:
            self._db.executemany("insert or replace into responses values (?, ?)", rows)

    def keep_only(self, keys: Iterable[str]) -> int:
        """Drop every response whose key is not in ``keys``; the number dropped. A cache of text
        derived from documents keeps nothing of a removed one (relationship keywords)."""
        with self._lock:
            with self._db:
                self._db.execute("create temp table if not exists kept (key text primary key)")
                self._db.execute("delete from kept")
                self._db.executemany("insert or ignore into kept values (?)", ((k,) for k in keys))
                dropped = self._db.execute(
                    "delete from responses where key not in (select key from kept)"
                ).rowcount
                self._db.execute("delete from kept")
            self._erase_journal(dropped)
        return dropped

    def forget(self, keys: Iterable[str]) -> int:
        """Drop the responses of ``keys`` (a removed document's); the number dropped."""
        with self._lock:
            with self._db:
                dropped = sum(
                    self._db.execute("delete from responses where key = ?", (key,)).rowcount for key in keys
                )
            self._erase_journal(dropped)
        return dropped

    def _erase_journal(self, dropped: int) -> None:
        """The WAL still holds the pages as they were before the delete: checkpoint and empty it
        (best effort: a reader of another process may keep it a while)."""
        if dropped:
            self._db.execute("pragma wal_checkpoint(TRUNCATE)")

    def delete(self, key: str) -> None:
        """Drop one response: the caller found it unusable, so the next run asks again."""
        with self._lock, self._db:
            self._db.execute("delete from responses where key = ?", (key,))

    def __len__(self) -> int:
        with self._lock:
            return int(self._db.execute("select count(*) from responses").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._db.close()
