"""Which entities changed since a step last read the graph tables, from the rows' own `indexed_at`.

An update's `graph_elements` makes again only the rows it affects; every other row is the last
build's, `indexed_at` included (a row's time is when it was made). So the entities whose own row,
or a relationship row at them, is newer than the newest row a step saw last time are exactly those
whose rows may differ since. A step records what it saw (`GraphSeen`) beside its output and asks
`changed_since` next time. The tables' file identities guard the rest: files not rewritten mean
nothing changed; files rewritten with no newer row (a restored copy, a clock set back) mean the
change is unknown, and the step computes everything.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Collection, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from graphunified_query.core.tables import INDEXED_AT

_KEY = b"graph_seen"  # the key in the recording table's Parquet metadata


@dataclass(frozen=True)
class GraphSeen:
    newest: int  # the newest `indexed_at` among the rows read, in the column's unit; -1: none
    files: tuple[tuple[int, ...], ...]  # the entities' and relationships' file identities

    def metadata(self) -> dict[bytes, bytes]:
        return {_KEY: json.dumps({"newest": self.newest, "files": self.files}).encode()}

    @classmethod
    def from_metadata(cls, metadata: Mapping[bytes, bytes] | None) -> GraphSeen | None:
        """What `metadata` recorded; None when it records nothing readable (an older table)."""
        try:
            fields = json.loads((metadata or {})[_KEY])
            return cls(int(fields["newest"]), tuple(tuple(int(n) for n in f) for f in fields["files"]))
        except (KeyError, TypeError, ValueError):
            return None


def graph_seen(entities: pa.Table, relationships: pa.Table, files: tuple[tuple[int, ...], ...]) -> GraphSeen:
    """What a step read: ``entities`` and ``relationships`` need their `indexed_at` column."""
    return GraphSeen(max(newest_row(entities), newest_row(relationships)), files)


def newest_row(table: pa.Table) -> int:
    """The newest `indexed_at` of ``table``'s rows, in the column's unit; -1: none."""
    newest = pc.max(table.column(INDEXED_AT.name).cast(pa.int64())).as_py()
    return -1 if newest is None else int(newest)


def recent_rows(table: pa.Table, seen: int | None, *, rewritten: bool) -> np.ndarray | None:
    """Per row of ``table`` (its `indexed_at` at least), whether it was made after ``seen``, the
    newest row a step read last time; None when that is unknown: nothing recorded, or the file
    ``rewritten`` since with no newer row (a restored copy, a clock set back)."""
    if seen is None:
        return None
    if not rewritten:
        return np.zeros(table.num_rows, bool)
    if newest_row(table) <= seen:
        return None
    return _newer(table, seen).to_numpy(zero_copy_only=False)


def _newer(table: pa.Table, seen: int) -> pa.Array:
    made = table.column(INDEXED_AT.name).cast(pa.int64())
    return pc.fill_null(pc.greater(made, seen), True).combine_chunks()  # no time: changed


@dataclass(frozen=True)
class GraphChanges:
    """The rows made since a step last read the graph tables."""

    entities: frozenset[str]  # entity ids whose rows were made since
    edges: frozenset[tuple[str, str]]  # (source_id, target_id) of the relationship rows made since

    def touch(self, members: Collection[str]) -> bool:
        """Whether a group of entities (a community) holds a changed entity, or both ends of a
        changed relationship: what a step reading the group's entities and inner edges must redo."""
        inside = members if isinstance(members, AbstractSet) else set(members)
        if not self.entities.isdisjoint(inside):
            return True
        ends = self._ends
        return any(not ends[m].isdisjoint(inside) for m in inside if m in ends)

    @cached_property
    def _ends(self) -> dict[str, set[str]]:
        """Each end of a changed relationship, and the other ends of its changed relationships."""
        ends: dict[str, set[str]] = defaultdict(set)
        for source, target in self.edges:
            ends[source].add(target)
            ends[target].add(source)
        return dict(ends)


def changed_since(
    seen: GraphSeen | None, entities: pa.Table, relationships: pa.Table, files: tuple[tuple[int, ...], ...]
) -> GraphChanges | None:
    """The rows made after ``seen`` (entities: id, indexed_at; relationships: source_id,
    target_id, indexed_at); None when that is unknown."""
    if seen is None:
        return None
    if files == seen.files:
        return GraphChanges(frozenset(), frozenset())
    if graph_seen(entities, relationships, files).newest <= seen.newest:
        return None  # rewritten, yet nothing newer: not an update of what was seen

    rows = relationships.filter(_newer(relationships, seen.newest))
    ends = zip(rows.column("source_id").to_pylist(), rows.column("target_id").to_pylist(), strict=True)
    made = entities.filter(_newer(entities, seen.newest)).column("id").to_pylist()
    return GraphChanges(frozenset(made), frozenset(ends))
