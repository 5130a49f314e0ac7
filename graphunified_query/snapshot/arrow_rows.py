"""Table rows read from Arrow on demand instead of held as one Python dict per row.

A snapshot at 25K chunks has ~0.6M relationship rows; as dicts they took gigabytes and seconds
to build. `ArrowRows` keeps the decoded Arrow table (compact, one buffer per column) and reads a
value only when a retriever asks for it. The few columns every query touches in loops (ids,
endpoints, weights) are turned into Python lists once, on first use, since an Arrow scalar read
costs microseconds; every other column (descriptions, report texts) stays in Arrow.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, overload

import pyarrow as pa


class ArrowRows(Sequence["ArrowRow"]):
    """The rows of one table; ``rows[i]`` is a read-only mapping of row ``i``'s columns."""

    def __init__(self, table: pa.Table, hot: Sequence[str] = ()) -> None:
        self._table = table
        self._arrays = {name: one_array(table.column(name)) for name in table.column_names}
        self._hot = frozenset(hot)
        self._lists: dict[str, list[Any]] = {}
        self.names: tuple[str, ...] = tuple(self._table.column_names)

    @property
    def table(self) -> pa.Table:
        return self._table

    def __len__(self) -> int:
        return self._table.num_rows

    @overload
    def __getitem__(self, index: int) -> ArrowRow: ...
    @overload
    def __getitem__(self, index: slice) -> list[ArrowRow]: ...
    def __getitem__(self, index: int | slice) -> ArrowRow | list[ArrowRow]:
        if isinstance(index, slice):
            return [ArrowRow(self, i) for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(f"row {index} out of range ({len(self)} rows)")
        return ArrowRow(self, index)

    def __iter__(self) -> Iterator[ArrowRow]:
        return (ArrowRow(self, i) for i in range(len(self)))

    def column(self, name: str) -> list[Any]:
        """A whole column as a Python list, converted once and kept (for columns read in loops)."""
        values = self._lists.get(name)
        if values is None:
            values = self._lists[name] = self._arrays[name].to_pylist()
        return values

    def value(self, row: int, name: str) -> Any:
        if name in self._lists or name in self._hot:
            return self.column(name)[row]
        return self._arrays[name][row].as_py()

    def warm(self) -> None:
        """Convert the hot columns now, so the first query does not pay for it."""
        for name in self._hot & set(self.names):
            self.column(name)


class ArrowRow(Mapping[str, Any]):
    """One row; values are read from the table when asked for."""

    __slots__ = ("_row", "_rows")

    def __init__(self, rows: ArrowRows, row: int) -> None:
        self._rows = rows
        self._row = row

    def __getitem__(self, name: str) -> Any:
        if name not in self._rows.names:
            raise KeyError(name)
        return self._rows.value(self._row, name)

    def __iter__(self) -> Iterator[str]:
        return iter(self._rows.names)

    def __len__(self) -> int:
        return len(self._rows.names)

    def __repr__(self) -> str:
        return f"ArrowRow({self._row}, {dict(self)!r})"


class ArrowStrings(Sequence[str]):
    """A string column read by row: chunk texts are materialized only for the contexts returned."""

    def __init__(self, column: pa.ChunkedArray | pa.Array) -> None:
        self._array = one_array(column) if isinstance(column, pa.ChunkedArray) else column

    def __len__(self) -> int:
        return len(self._array)

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> list[str]: ...
    def __getitem__(self, index: int | slice) -> str | list[str]:
        if isinstance(index, slice):
            return self._array[index].to_pylist()
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(f"row {index} out of range ({len(self)} rows)")
        return self._array[index].as_py()

    def __iter__(self) -> Iterator[str]:
        return iter(self._array.to_pylist())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sequence):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]


def one_array(column: pa.ChunkedArray) -> pa.Array:
    """The column as one array; a single chunk is used as it is (`combine_chunks` would copy it,
    reading a whole mapped column into memory)."""
    return column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()


def column_of(rows: Sequence[Mapping[str, Any]], name: str) -> list[Any]:
    """A column of ``rows``: straight from Arrow for `ArrowRows`, else row by row (dicts)."""
    if isinstance(rows, ArrowRows):
        return rows.column(name)
    return [row[name] for row in rows]
