"""`changed_since`: the graph rows made since a step read the tables, or None when that is unknown."""

from __future__ import annotations

import pyarrow as pa

from graphunified_assets.lib.graph.graph_seen import (
    GraphChanges,
    GraphSeen,
    changed_since,
    graph_seen,
    newest_row,
    recent_rows,
)
from graphunified_query.core.tables import TIMESTAMP

FILES = ((10, 1, 7), (20, 1, 8))
REWRITTEN = ((11, 2, 9), (20, 2, 10))


def _entities(made: dict[str, int | None]) -> pa.Table:
    return pa.table(
        {"id": list(made), "indexed_at": pa.array(list(made.values()), pa.int64()).cast(TIMESTAMP)}
    )


def _relationships(made: dict[tuple[str, str], int | None]) -> pa.Table:
    return pa.table(
        {
            "source_id": [s for s, _ in made],
            "target_id": [t for _, t in made],
            "indexed_at": pa.array(list(made.values()), pa.int64()).cast(TIMESTAMP),
        }
    )


def test_rows_newer_than_the_newest_seen_are_the_changes() -> None:
    entities = _entities({"a": 100, "b": 100, "c": 250})
    relationships = _relationships({("a", "b"): 100, ("b", "d"): 250, ("a", "c"): None})
    seen = graph_seen(_entities({"a": 100, "b": 100}), _relationships({("a", "b"): 100}), FILES)
    assert seen.newest == 100
    changed = changed_since(seen, entities, relationships, REWRITTEN)
    # A row without a time counts as made since.
    assert changed == GraphChanges(frozenset({"c"}), frozenset({("b", "d"), ("a", "c")}))


def test_unknown_when_nothing_was_recorded_or_the_files_were_rewritten_with_nothing_newer() -> None:
    entities, relationships = _entities({"a": 100}), _relationships({})
    assert changed_since(None, entities, relationships, FILES) is None
    seen = GraphSeen(100, FILES)
    # A restored copy, or rows made while the clock read earlier: not an update of what was seen.
    assert changed_since(seen, entities, relationships, REWRITTEN) is None
    assert changed_since(seen, _entities({"a": 90}), relationships, REWRITTEN) is None
    # The same files: nothing made since, whatever the times say.
    assert changed_since(seen, _entities({"a": 500}), relationships, FILES) == GraphChanges(
        frozenset(), frozenset()
    )


def test_the_record_round_trips_through_parquet_metadata_and_garbage_reads_as_none() -> None:
    seen = GraphSeen(123, FILES)
    assert GraphSeen.from_metadata(seen.metadata()) == seen
    for metadata in (None, {}, {b"graph_seen": b"{"}, {b"graph_seen": b'{"newest": 1}'}):
        assert GraphSeen.from_metadata(metadata) is None
    assert graph_seen(_entities({}), _relationships({}), FILES).newest == -1


def test_a_group_is_touched_by_a_changed_member_or_a_changed_edge_inside_it() -> None:
    changes = GraphChanges(frozenset({"x"}), frozenset({("a", "b"), ("c", "y")}))
    assert changes.touch({"x", "q"})
    assert changes.touch(["a", "b", "q"])
    assert not changes.touch({"a", "c", "q"})  # each changed edge has an end outside
    assert not changes.touch(("y",))


def test_recent_rows_marks_the_rows_made_since_or_says_it_cannot_tell() -> None:
    table = _entities({"a": 100, "b": 250, "c": None, "d": 90})
    assert recent_rows(table, None, rewritten=True) is None  # nothing recorded
    assert recent_rows(table, 100, rewritten=True).tolist() == [False, True, True, False]  # type: ignore[union-attr]
    # The file as it was seen: nothing made since, whatever the times say.
    assert recent_rows(table, 100, rewritten=False).tolist() == [False] * 4  # type: ignore[union-attr]
    # Rewritten with no row newer than the newest seen: a restored copy, not an update.
    assert recent_rows(_entities({"a": 100, "d": 90}), 100, rewritten=True) is None
    assert newest_row(table) == 250 and newest_row(_entities({})) == -1
