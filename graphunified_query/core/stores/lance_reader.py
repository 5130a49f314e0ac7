"""Reading a generation's LanceDB tables: opened at the recorded version, read whole, damage named.

Lance reads data files lazily, so whatever the snapshot reads from a table is read whole at load:
a truncated or deleted data file fails then, with the table and the rebuild command named, not
in the middle of a query. A generation mapped from the snapshot cache opens no table at all.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from graphunified_query.core.stores.errors import StoreDamaged

if TYPE_CHECKING:
    from graphunified_query.core.stores.publication import PublishedFiles


class LanceTables:
    """The generation's LanceDB tables, connected to and opened only when something is read
    from them (a generation mapped from the cache never imports lancedb)."""

    def __init__(self, generation: PublishedFiles, hint: str) -> None:
        self.generation = generation
        self.hint = hint
        self._db: Any = None
        self._tables: dict[str, Any] = {}

    def table(self, name: str) -> Any:
        if name not in self._tables:
            if self._db is None:
                self._db = self.generation.lance_connect()
            self._tables[name] = _open(self._db, name, self.generation, self.hint)
        return self._tables[name]

    def fingerprint(self, name: str) -> str:
        """The table's version and its data files' names and sizes (a local table): a file
        truncated or deleted since the cache was written changes it, so the cache is not used
        and the damage is read, and named, as without a cache."""
        folder = Path(self.generation.lance_location(name)) / "data"
        files = sorted((f.name, f.stat().st_size) for f in folder.iterdir()) if folder.is_dir() else []
        return f"{self.generation.lance_location(name)}|{self.version(name)}|{files}"

    def version(self, name: str) -> int:
        recorded = self.generation.lance_version(name)
        return recorded if recorded is not None else int(self.table(name).version)

    def scan(self, name: str, *, columns: tuple[str, ...] = (), exclude: tuple[str, ...] = ()) -> pa.Table:
        return _scan(self.table(name), name, self.generation, self.hint, columns=columns, exclude=exclude)

    def count(self, name: str) -> int:
        return _count(self.table(name), name, self.generation, self.hint)


def _open(db: Any, name: str, generation: PublishedFiles, hint: str) -> Any:
    """A LanceDB table at the version the generation recorded (the latest for older homes)."""
    version = generation.lance_version(name)
    try:
        return db.open_table(name, version=version) if version is not None else db.open_table(name)
    except Exception as error:  # lance raises several error types for damaged files
        raise damaged(name, generation, hint, error) from None


def _scan(
    table: Any,
    name: str,
    generation: PublishedFiles,
    hint: str,
    *,
    columns: tuple[str, ...] = (),
    exclude: tuple[str, ...] = (),
) -> pa.Table:
    """Whole columns of a LanceDB table. Lance reads data files lazily, so what is read is read
    whole here: a truncated or deleted data file fails now, with the table named, not mid-query."""
    try:
        wanted = list(columns) or [c for c in table.schema.names if c not in exclude]
        return table.search().select(wanted).limit(None).to_arrow()
    except Exception as error:  # lance raises several error types for damaged files
        raise damaged(name, generation, hint, error) from None


def _count(table: Any, name: str, generation: PublishedFiles, hint: str) -> int:
    try:
        return int(table.count_rows())
    except Exception as error:  # lance raises several error types for damaged files
        raise damaged(name, generation, hint, error) from None


def damaged(name: str, generation: PublishedFiles, hint: str, error: Exception) -> StoreDamaged:
    version = generation.lance_version(name)
    state = f"unreadable ({type(error).__name__}: {error})" if generation.lance_exists(name) else "missing"
    at = f" at version {version}" if version is not None else ""
    where = generation.lance_location(name)
    return StoreDamaged(f"{where}{at} is {state}; rebuild it with `{hint}`.")
