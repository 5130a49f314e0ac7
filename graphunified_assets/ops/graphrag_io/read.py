"""Read a GraphRAG output folder of any version into v3-shaped Arrow tables.

v1 names files ``create_final_*.parquet`` and a few columns differently, v2 keeps a chunk's
documents as a list and a document's fields as ``metadata``; both are renamed to v3 here, so
the conversion to our tables sees one shape. Columns GraphRAG added over time may be absent;
the conversion derives them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from graphunified_assets.ops.graphrag_io.schema import ALIASES, GRAPHRAG_TABLES, REQUIRED, file_names


class GraphRAGFormatError(ValueError):
    """The folder is not a GraphRAG output folder we can read; the message names the file."""


@dataclass(frozen=True)
class GraphRAGTables:
    folder: Path
    version: str  # "v1", "v2" or "v3": the oldest layout any table used
    tables: dict[str, pa.Table]


def read_graphrag(folder: Path) -> GraphRAGTables:
    root = _output_folder(folder)
    version = "v3"
    tables: dict[str, pa.Table] = {}
    for name in GRAPHRAG_TABLES:
        path = _find(root, name)
        table, renamed = _v3_names(name, _read(path))
        missing = [column for column in REQUIRED[name] if column not in table.column_names]
        if missing:
            raise GraphRAGFormatError(
                f"{path}: missing required column {', '.join(map(repr, missing))} of GraphRAG's {name} table "
                f"(has {', '.join(table.column_names)})"
            )
        if path.name.startswith("create_final_"):
            version = "v1"
        elif renamed and version == "v3":
            version = "v2"
        tables[name] = table
    return GraphRAGTables(root, version, tables)


def _output_folder(folder: Path) -> Path:
    """The folder itself, or the ``output/`` of a GraphRAG project root."""
    if not folder.is_dir():
        raise GraphRAGFormatError(f"{folder} is not a folder; pass GraphRAG's output folder")
    has_tables = any((folder / f).exists() for name in GRAPHRAG_TABLES for f in file_names(name))
    return folder / "output" if not has_tables and (folder / "output").is_dir() else folder


def _find(root: Path, name: str) -> Path:
    for file_name in file_names(name):
        if (root / file_name).exists():
            return root / file_name
    wanted = " or ".join(file_names(name))
    raise GraphRAGFormatError(f"{root}: no {wanted}; is this a GraphRAG output folder?")


def _read(path: Path) -> pa.Table:
    try:
        return pq.read_table(path)
    except (pa.ArrowInvalid, OSError) as error:
        raise GraphRAGFormatError(f"{path} is not a readable Parquet file ({error})") from None


def _v3_names(name: str, table: pa.Table) -> tuple[pa.Table, bool]:
    """Rename older columns to their v3 names; True when any was renamed."""
    renamed = False
    for column, aliases in ALIASES.get(name, {}).items():
        old = next((a for a in aliases if a in table.column_names), None)
        if column in table.column_names or old is None:
            continue
        values: pa.ChunkedArray | pa.Array = table.column(old)
        if old == "document_ids":  # GraphRAG chunks within a document, so the list holds one id
            values = pa.array([ids[0] if ids else None for ids in values.to_pylist()], pa.string())
        table = table.drop_columns([old]).append_column(column, values)
        renamed = True
    return table, renamed
