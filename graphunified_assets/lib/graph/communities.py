"""The communities found by `leiden`, as GraphRAG's `communities` table with a content hash each.

The hash covers exactly a report's inputs (members, their descriptions, the edges inside), so a
report is regenerated exactly when it would say something different.

Numbers are stable across updates: a community with the same level and members as one in the
previous table keeps its number; new communities take the numbers no kept one holds, smallest
first. Numbering 0..n-1 afresh on every update shifted the numbers of nearly every community
after the first one a change added or removed (14,800 of 14,996 when one document was added to the
12.6K-passage index), and every report and report-point vector, keyed by community, was
rewritten for it.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from datetime import date
from itertools import count, pairwise
from typing import NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from graphunified_assets.lib.graph.graph_seen import GraphChanges
from graphunified_assets.lib.graph.leiden import Community
from graphunified_query.core.tables import COMMUNITIES_SCHEMA, INDEXED_AT


class CommunityTable(NamedTuple):
    table: pa.Table
    reused: int  # rows taken from the previous table (`changed`)


def communities_table(
    communities: Sequence[Community],
    *,
    relationships: pa.Table,
    entities: pa.Table,
    previous: pa.Table | None = None,
    changed: GraphChanges | None = None,
) -> CommunityTable:
    """GraphRAG's columns, from ``relationships`` (id, source_id, target_id, description) and
    ``entities`` (id, description, text_unit_ids). A cold build numbers communities 0..n-1 by
    (level, first member); an update (``previous``: the last table) keeps the numbers of unchanged
    memberships. A community whose report inputs did not change keeps its ``period`` too.

    ``changed``: the graph rows made since ``previous`` was (None: not known). A community of
    ``previous``' level and members that no changed row touches takes its members, edges, chunks
    and hash from its row there: its report inputs are the same. Computed for every community,
    they took 2 s of each update at 12.6K passages."""
    memberships = [_membership(c.level, c.entity_ids) for c in communities]
    before = _previous_rows(previous)
    number = _numbers(communities, memberships, before, previous)
    previous_periods = _previous_periods(previous)
    children: dict[tuple[int, int], list[int]] = defaultdict(list)
    for c in communities:
        if c.parent_key is not None and c.parent_key in number:
            children[c.parent_key].append(number[c.key])
    kept = (
        {}
        if changed is None or previous is None
        else {
            i: row
            for i, (c, key) in enumerate(zip(communities, memberships, strict=True))
            if (row := before.get(key)) is not None and not changed.touch(c.entity_ids)
        }
    )
    made = [c for i, c in enumerate(communities) if i not in kept]
    inputs = _ReportInputs(made, relationships, entities)
    fresh_hashes = inputs.content_hashes()
    reused = _Reused(communities, kept, previous)
    hashes = reused.strings("content_hash", fresh_hashes)
    numbers = [number[c.key] for c in communities]
    today = date.today().isoformat()
    columns = {
        "id": [_community_id(c.level, h) for c, h in zip(communities, hashes, strict=True)],
        "human_readable_id": numbers,
        "community": numbers,
        "level": [c.level for c in communities],
        "parent": [number.get(c.parent_key, -1) if c.parent_key is not None else -1 for c in communities],
        "children": [sorted(children[c.key]) for c in communities],
        "title": [f"Community {n}" for n in numbers],
        "entity_ids": reused.column("entity_ids", inputs.entity_ids()),
        "relationship_ids": reused.column("relationship_ids", inputs.relationship_ids()),
        "text_unit_ids": reused.column("text_unit_ids", inputs.text_unit_ids()),
        "period": [previous_periods.get(h, today) for h in hashes],
        "size": [len(c.entity_ids) for c in communities],
        "content_hash": hashes,
        INDEXED_AT.name: pa.nulls(len(communities), INDEXED_AT.type),
    }
    return CommunityTable(pa.table(columns, schema=COMMUNITIES_SCHEMA), reused=len(kept))


class _Reused:
    """Whole columns of ``communities``' order from two sources: the rows of ``previous`` that
    ``kept`` maps them to, and the values made for the others (in their order)."""

    def __init__(self, communities: Sequence[Community], kept: Mapping[int, int], previous: pa.Table | None):
        self.previous = previous
        self.kept_at = np.fromiter(kept, np.int64, len(kept))  # output positions taken from `previous`
        self.rows = pa.array(list(kept.values()), pa.int64())  # their rows there
        made_at = np.setdiff1d(np.arange(len(communities)), self.kept_at)
        # Output position i is row order[i] of concat(kept values, made values).
        self.order = pa.array(np.argsort(np.concatenate([self.kept_at, made_at]), kind="stable"))

    def column(self, name: str, made: pa.Array) -> pa.Array:
        if self.previous is None or not len(self.kept_at):
            return made
        old = self.previous.column(name).take(self.rows).combine_chunks().cast(made.type)
        return pa.concat_arrays([old, made]).take(self.order)

    def strings(self, name: str, made: list[str]) -> list[str]:
        return self.column(name, pa.array(made, pa.string())).to_pylist()


class _ReportInputs:
    """Each community's members, inner edges and chunks as Arrow arrays, whole columns at a time:
    per community in Python (a set of members, a scan of each member's edges, a line per member
    and edge) this took 2.5 s at 12.6K passages, on every update. Rows are in ``communities``'
    order; within a row as `community_hash` orders them (members, then edges by id)."""

    def __init__(self, communities: Sequence[Community], relationships: pa.Table, entities: pa.Table) -> None:
        self.count = len(communities)
        self.sizes = np.fromiter((len(c.entity_ids) for c in communities), np.int64, self.count)
        self.members = pa.array([e for c in communities for e in c.entity_ids], pa.string())
        self.member_of = np.repeat(np.arange(self.count), self.sizes)  # each membership's community
        # Each distinct member once: its code is its place in `vocabulary`.
        self.vocabulary = pc.unique(self.members)
        self.code = _positions(self.members, self.vocabulary)
        self.entity_row = _positions(self.vocabulary, entities.column("id"))  # -1: not in `entities`
        self.entities = entities
        self.edge_rows, self.edge_of = self._inner_edges(communities, relationships)
        self.edges = relationships.select(["id", "description"]).take(pa.array(self.edge_rows, pa.int64()))
        self.edge_counts = np.bincount(self.edge_of, minlength=self.count)

    def _inner_edges(
        self, communities: Sequence[Community], relationships: pa.Table
    ) -> tuple[np.ndarray, np.ndarray]:
        """Rows of ``relationships`` with both ends in one community, and that community, sorted
        by (community, edge id). A level's communities share no member: one array maps them."""
        source = _positions(relationships.column("source_id"), self.vocabulary)
        target = _positions(relationships.column("target_id"), self.vocabulary)
        levels = np.fromiter((c.level for c in communities), np.int64, self.count)
        rows, owners = [], []
        for level in np.unique(levels):
            community_of = np.full(len(self.vocabulary) + 1, -1, np.int64)  # the last slot: no member
            at_level = levels[self.member_of] == level
            community_of[self.code[at_level]] = self.member_of[at_level]
            ends = community_of[source], community_of[target]  # -1 indexes the last slot
            inside = (ends[0] >= 0) & (ends[0] == ends[1])
            rows.append(np.flatnonzero(inside))
            owners.append(ends[0][inside])
        row = np.concatenate([*rows, []]).astype(np.int64)  # no community: none
        owner = np.concatenate([*owners, []]).astype(np.int64)
        # Only these rows' ids are sorted: an update's few communities have few edges of 316K.
        ids = relationships.column("id").take(pa.array(row))
        keys = pa.table({"owner": owner, "id": ids})
        order = pc.sort_indices(keys, sort_keys=[("owner", "ascending"), ("id", "ascending")]).to_numpy()
        return row[order], owner[order]

    def content_hashes(self) -> list[str]:
        """`community_hash` of each community: its member lines, then its edge lines, hashed."""
        # A member missing from `entities` has no description (the "" after the table's); a null
        # one reads "None", as `community_hash`'s f-string of it does.
        descriptions = self.entities.column("description").fill_null("None")
        texts = pa.concat_arrays([*descriptions.chunks, pa.array([""], descriptions.type)])
        texts = texts.take(pa.array(np.where(self.entity_row >= 0, self.entity_row, len(texts) - 1)))
        # Each community's members are contiguous in membership order, its edges in edge order.
        members = _slices(_lines("E", self.vocabulary, texts).take(pa.array(self.code)), self.sizes)
        edge_texts = self.edges.column("description").fill_null("None")
        edges = _slices(_lines("R", self.edges.column("id"), edge_texts), self.edge_counts)
        hashes = []
        for member_lines, edge_lines in zip(members, edges, strict=True):
            digest = hashlib.sha256(member_lines)
            digest.update(edge_lines)
            hashes.append(digest.hexdigest())
        return hashes

    def entity_ids(self) -> pa.Array:
        return pa.ListArray.from_arrays(_offsets(self.sizes), self.members)

    def relationship_ids(self) -> pa.Array:
        ids = self.edges.column("id").combine_chunks()
        return pa.ListArray.from_arrays(_offsets(self.edge_counts), ids)

    def text_unit_ids(self) -> pa.Array:
        """The sorted union of each community's members' chunks."""
        units = self.entities.column("text_unit_ids").combine_chunks()
        starts = units.offsets.to_numpy()
        row = self.entity_row[self.code]  # each membership's entity row; -1, when missing, reads
        lengths = np.append(np.diff(starts), 0)[row]  # the appended empty list
        first = np.append(starts[:-1], 0)[row]
        shift = np.repeat(first - _offsets(lengths)[:-1], lengths)
        values = units.values.take(pa.array(shift + np.arange(lengths.sum())))
        owner = np.repeat(self.member_of, lengths)
        names = pc.unique(values)
        names = names.take(pc.sort_indices(names))
        pairs = np.unique(owner * max(len(names), 1) + _positions(values, names))
        return pa.ListArray.from_arrays(
            _offsets(np.bincount(pairs // max(len(names), 1), minlength=self.count)),
            names.take(pa.array(pairs % max(len(names), 1))),
        )


def _community_id(level: int, content_hash: str) -> str:
    return hashlib.sha256(f"{level}|{content_hash}".encode()).hexdigest()[:32]


def _positions(values: pa.Array | pa.ChunkedArray, of: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """Each value's place in ``of`` (its first), -1 when absent."""
    found = pc.index_in(values, value_set=of if isinstance(of, pa.Array) else of.combine_chunks())
    return found.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)


def _lines(tag: str, ids: pa.Array | pa.ChunkedArray, texts: pa.Array | pa.ChunkedArray) -> pa.Array:
    """``{tag}|{id}|{text}\\n`` per row (`_entity_line`, `_edge_line`), as large strings."""
    big = pa.large_string()
    parts = [pa.scalar(tag, big), ids.cast(big), texts.cast(big), pa.scalar("|", big)]
    return pc.binary_join_element_wise(
        pc.binary_join_element_wise(*parts), pa.scalar("", big), pa.scalar("\n", big)
    )


def _slices(lines: pa.Array | pa.ChunkedArray, counts: np.ndarray) -> Iterator[memoryview]:
    """The bytes of each run of ``counts[i]`` consecutive lines, without copying them."""
    whole = lines.combine_chunks() if isinstance(lines, pa.ChunkedArray) else lines
    offsets = np.frombuffer(whole.buffers()[1], np.int64)[whole.offset :][: len(whole) + 1]
    data = memoryview(whole.buffers()[2] or b"")
    bounds = offsets[_offsets(counts).to_numpy()].tolist()
    return (data[a:b] for a, b in pairwise(bounds))


def _offsets(lengths: np.ndarray) -> pa.Array:
    return pa.array(np.concatenate([[0], np.cumsum(lengths)]), pa.int32())


def _membership(level: int, entity_ids: Sequence[str]) -> str:
    return hashlib.sha256("\x1f".join([str(level), *sorted(entity_ids)]).encode()).hexdigest()


def _previous_rows(previous: pa.Table | None) -> dict[str, int]:
    """Each membership of ``previous`` (its level and members) and its row."""
    if previous is None:
        return {}
    columns = (previous.column(c).to_pylist() for c in ("level", "entity_ids"))
    return {
        _membership(level, members): row for row, (level, members) in enumerate(zip(*columns, strict=True))
    }


def _numbers(
    communities: Sequence[Community],
    memberships: Sequence[str],
    before: Mapping[str, int],
    previous: pa.Table | None,
) -> dict[tuple[int, int], int]:
    """Each community's number: its previous one when the same level and members were numbered
    before, else the smallest number no kept community holds (in (level, first member) order)."""
    numbers = previous.column("community").to_pylist() if previous is not None else []
    number: dict[tuple[int, int], int] = {}
    for c, key in zip(communities, memberships, strict=True):
        row = before.get(key)
        if row is not None:
            number[c.key] = numbers[row]
    taken = set(number.values())
    free = (n for n in count() if n not in taken)
    for c in communities:
        if c.key not in number:
            number[c.key] = next(free)
    return number


def _previous_periods(previous: pa.Table | None) -> dict[str, str]:
    if previous is None:
        return {}
    hashes, periods = previous.column("content_hash").to_pylist(), previous.column("period").to_pylist()
    return dict(zip(hashes, periods, strict=True))


def community_hash(
    entity_ids: Sequence[str], descriptions: Mapping[str, str], internal_edges: Sequence[Mapping[str, str]]
) -> str:
    """Changes exactly when a report's inputs change: members, their descriptions, inner edges."""
    lines = [_entity_line(e, descriptions.get(e, "")) for e in sorted(entity_ids)]
    lines += [
        _edge_line(edge["id"], edge["description"]) for edge in sorted(internal_edges, key=lambda e: e["id"])
    ]
    return hashlib.sha256(b"".join(lines)).hexdigest()


def _entity_line(entity_id: str, description: str) -> bytes:
    return f"E|{entity_id}|{description}\n".encode()


def _edge_line(edge_id: str, description: str) -> bytes:
    return f"R|{edge_id}|{description}\n".encode()
