"""The last build's rows an update keeps, brought up to date, and merged with the rows it made.

An update makes only the affected entities' and relationships' rows (`graph_elements`); every
other row is the last build's, with the columns that depend on the whole graph made again (an
entity's degree, an edge's combined degree, a fact's entity ids), in the table's order.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from graphunified_assets.lib.graph.graph_rows import Triple, batches, fact_id
from graphunified_assets.lib.rows_in_runs import take_in_runs
from graphunified_query.core.artifacts import ENTITIES, FACTS, RELATIONSHIPS
from graphunified_query.core.tables import ENTITIES_SCHEMA, FACTS_SCHEMA, INDEXED_AT, RELATIONSHIPS_SCHEMA


class StaleGraphState(RuntimeError):
    """The state does not describe the tables it was given: build from nothing instead."""


def without(table: pa.Table, schema: pa.Schema, ids: set[str], columns: Sequence[str]) -> pa.Table:
    """``table``'s rows whose ``columns`` hold none of ``ids``."""
    table = table.select(schema.names).cast(schema)
    value_set = pa.array(sorted(ids), pa.string())
    hit = None
    for column in columns:
        found = pc.is_in(table.column(column), value_set=value_set)
        hit = found if hit is None else pc.or_(hit, found)
    return table if hit is None else table.filter(pc.invert(hit))


def _set_column(table: pa.Table, name: str, values: pa.ChunkedArray | list[Any]) -> pa.Table:
    """``table`` with ``name`` set to ``values``; rows whose value changed lose their
    `indexed_at`, so they are stamped with this build's time."""
    index = table.schema.get_field_index(name)
    field = table.schema.field(index)
    new = pa.array(values, field.type) if isinstance(values, list) else values.cast(field.type)
    old = table.column(name)
    same = pc.fill_null(pc.equal(old, new), pc.and_(pc.is_null(old), pc.is_null(new)))
    table = table.set_column(index, field, new)
    stamp = table.schema.get_field_index(INDEXED_AT.name)
    nothing = pa.nulls(table.num_rows, INDEXED_AT.type)
    return table.set_column(stamp, INDEXED_AT, pc.if_else(same, table.column(stamp), nothing))


def _degrees(ids: pa.ChunkedArray, degree: Counter[str]) -> pa.ChunkedArray:
    """Each id's degree (0 for one with no edge), looked up in Arrow: per row in Python, the
    316K relationships' two ends took half a second of every update at 12.6K passages."""
    known = pa.array(list(degree), pa.string())
    counts = pa.array(list(degree.values()), pa.int64())
    return pc.fill_null(pc.take(counts, pc.index_in(ids, value_set=known)), 0)


def kept_entities(entities: pa.Table, affected: set[str], degree: Counter[str]) -> pa.Table:
    kept = without(entities, ENTITIES_SCHEMA, affected, ("id",))
    return _set_column(kept, "degree", _degrees(kept.column("id"), degree))


def with_degrees(relationships: pa.Table, degree: Counter[str]) -> pa.Table:
    ends = [_degrees(relationships.column(end), degree) for end in ("source_id", "target_id")]
    return _set_column(relationships, "combined_degree", pc.add(*ends))


def kept_facts(facts: pa.Table, triples: set[Triple], by_name: dict[str, str]) -> pa.Table:
    kept = without(facts, FACTS_SCHEMA, {fact_id(t) for t in triples}, ("id",))
    kept = _set_column(
        kept, "subject_id", [by_name.get(s.lower()) for s in kept.column("subject").to_pylist()]
    )
    return _set_column(kept, "object_id", [by_name.get(o.lower()) for o in kept.column("object").to_pylist()])


def merged(
    name: str, kept: pa.Table | None, made: Iterator[dict[str, Any]], rows: int | None = None
) -> Iterator[pa.Table]:
    """The made rows, a slice at a time as they are made (a build from nothing); or with the
    ``kept`` rows of the last build, in the table's order, as one table (an update: few rows are
    made). ``rows``: how many the table must have (a state that does not match its tables has
    fewer)."""
    schema, order = _TABLES[name]
    if kept is None:
        yield from (pa.Table.from_batches([batch]) for batch in batches(made, schema))
        return
    table = pa.concat_tables([kept, pa.Table.from_pylist(list(made), schema=schema)])
    if rows is not None and table.num_rows != rows:
        raise StaleGraphState(
            f"the last build's {name} and its state disagree ({table.num_rows} rows, not {rows})"
        )
    yield take_in_runs(table, order(table))


def _entity_order(table: pa.Table) -> pa.Array:
    # As resolution sorts its entities: Arrow has no casefold.
    keys = list(
        zip(
            table.column("type").to_pylist(),
            [title.casefold() for title in table.column("title").to_pylist()],
            table.column("id").to_pylist(),
            strict=True,
        )
    )
    return pa.array(sorted(range(len(keys)), key=keys.__getitem__), pa.int64())


def _sorted_by(*columns: str) -> Callable[[pa.Table], pa.Array]:
    # Arrow compares strings as UTF-8 bytes: the order of their code points, as Python's sort.
    return lambda table: pc.sort_indices(table, sort_keys=[(c, "ascending") for c in columns])


_TABLES: dict[str, tuple[pa.Schema, Callable[[pa.Table], Any]]] = {
    ENTITIES: (ENTITIES_SCHEMA, _entity_order),
    RELATIONSHIPS: (RELATIONSHIPS_SCHEMA, _sorted_by("source_id", "target_id")),
    FACTS: (FACTS_SCHEMA, _sorted_by("subject", "predicate", "object")),
}
