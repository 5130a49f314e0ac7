"""What the graph stage keeps from one build to the next, so an update patches its tables.

An update used to rebuild the entities, relationships and facts tables from every extraction
row: at 12.6K passages, 30-44 s of a one-document update, to change a few dozen rows. The state
kept here is what a build cannot read back from those tables: every mention group chunk by chunk
(resolution's input; a removed chunk's mentions come out exactly), each chunk's fact triples,
which entity each group belonged to, and which document files the build read. With it an update
reads only the rows of changed documents and of the chunks that mention an affected entity
(`graph_elements`).

It is a cache in the home's cache folder: a state that fails to load, was made by other code or
settings, or describes other tables than the ones on disk is ignored, and the build starts from
nothing, as the first build did.
"""

from __future__ import annotations

import os
import pickle
from collections import Counter, defaultdict
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from graphunified_assets.lib.collector import collector_paused
from graphunified_assets.lib.graph.resolution import EntityMention, GroupKey, MentionGroup, group_key

Triple = tuple[str, str, str]  # (subject, predicate, object)
Stamp = list[int]  # a file's [size, mtime_ns]: a rewritten file has another

# Bumped whenever the state's layout or what the tables are made of changes.
STATE_VERSION = 2  # 2: groups and triples pickled as one packed blob


@dataclass
class GraphState:
    groups: dict[GroupKey, MentionGroup] = field(default_factory=dict)
    triples: dict[str, tuple[Triple, ...]] = field(default_factory=dict)  # chunk id -> its facts
    entity_of: dict[GroupKey, str] = field(default_factory=dict)  # group -> its entity at the last build
    documents: dict[str, tuple[Stamp, list[str]]] = field(default_factory=dict)  # -> (stamp, chunk ids)
    settings: dict[str, Any] = field(default_factory=dict)  # what the tables were built with
    tables: dict[str, list[int]] = field(default_factory=dict)  # table -> its file's identity
    packed: bytes | None = field(default=None, repr=False)  # the groups and triples, while packed

    @property
    def is_empty(self) -> bool:
        return not self.documents and not self.groups and self.packed is None

    # The groups and triples as objects are several times their pickled size (at 12.6K passages
    # they added ~0.3 GB to the graph stage's peak, which comes after resolution, where they are
    # no longer read): packed from then until saved, unpacked by the next build that uses them.
    @collector_paused()
    def pack(self) -> None:
        if self.packed is None:
            self.packed = pickle.dumps(self._contents(), protocol=pickle.HIGHEST_PROTOCOL)
            self.groups, self.triples = {}, {}

    @collector_paused()
    def unpack(self) -> None:
        if self.packed is not None:
            groups, self.triples = pickle.loads(self.packed)
            self.groups, self.packed = _groups(groups), None

    def _contents(self) -> tuple[dict[GroupKey, Any], dict[str, tuple[Triple, ...]]]:
        return {key: (group.by_chunk, group.fragments) for key, group in self.groups.items()}, self.triples

    def changed_documents(self, stamps: Mapping[str, Stamp]) -> tuple[set[str], set[str]]:
        """(documents gone or rewritten since the build, documents new or rewritten)."""
        gone = {doc for doc, (stamp, _) in self.documents.items() if stamps.get(doc) != stamp}
        new = {doc for doc, stamp in stamps.items() if doc not in self.documents or doc in gone}
        return gone, new

    def record_documents(self, stamps: Mapping[str, Stamp], chunks: Mapping[str, list[str]]) -> None:
        """The documents this build read: each one's file stamp and chunk ids."""
        self.documents = {doc: (list(stamp), list(chunks.get(doc, ()))) for doc, stamp in stamps.items()}

    def remove_documents(self, documents: Iterable[str]) -> tuple[set[GroupKey], set[Triple]]:
        """Takes out every mention and fact of ``documents``' chunks; returns the groups and
        triples that changed."""
        chunks = {chunk for doc in documents for chunk in self.documents.pop(doc, ([], []))[1]}
        touched: set[GroupKey] = set()
        if not chunks:  # an update that only adds: no group to scan (72K at 12.6K passages)
            return touched, set()
        for key, group in self.groups.items():
            if not chunks.isdisjoint(group.by_chunk):
                touched.add(key)
                for chunk in chunks.intersection(group.by_chunk):
                    group.remove_chunk(chunk)
        for key in touched:
            if not self.groups[key].surfaces:
                del self.groups[key]
        triples = {t for chunk in chunks for t in self.triples.pop(chunk, ())}
        return touched, triples

    def add_row(self, row: Mapping[str, Any], touched: set[GroupKey], triples: set[Triple]) -> None:
        """Puts in a chunk's mentions and facts, noting the groups and triples they change."""
        chunk = row["chunk_id"]
        for e in row["entities"]:
            if found := group_key(e["name"], e["type"]):
                key, surface = found
                group = self.groups.get(key)
                if group is None:
                    group = self.groups[key] = MentionGroup()
                group.add(EntityMention(e["name"], e["type"], e["description"], chunk), surface)
                touched.add(key)
        facts = tuple((f["subject"], f["predicate"], f["object"]) for f in row["facts"])
        if facts:
            self.triples[chunk] = self.triples.get(chunk, ()) + facts
            triples.update(facts)

    def chunks_of(self, triples: Collection[Triple] | None) -> dict[Triple, set[str]]:
        """The chunks stating each of ``triples`` (None: every triple)."""
        found: dict[Triple, set[str]] = defaultdict(set)
        for chunk, stated in self.triples.items():
            for triple in stated:
                if triples is None or triple in triples:
                    found[triple].add(chunk)
        return found

    def fact_count(self) -> int:
        return len({triple for stated in self.triples.values() for triple in stated})

    # Pickled as built-in containers: a dataclass and a Counter per group (78K at 12.6K passages)
    # took 0.9 s to write and 0.8 s to read, 0.5 and 0.5 s this way.
    def __getstate__(self) -> dict[str, Any]:
        packed = self.packed or pickle.dumps(self._contents(), protocol=pickle.HIGHEST_PROTOCOL)
        return {**self.__dict__, "groups": {}, "triples": {}, "packed": packed}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.unpack()

    @collector_paused()  # a million small objects, none in a cycle
    def save(self, path: Path) -> None:
        """Written beside ``path`` and renamed over it: a crash leaves the previous state."""
        staged = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        try:
            with staged.open("wb") as handle:
                pickle.dump((STATE_VERSION, self), handle, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(staged, path)
        finally:
            staged.unlink(missing_ok=True)


@collector_paused()
def load_state(path: Path, settings: Mapping[str, Any], tables: Mapping[str, list[int]]) -> GraphState:
    """The state of the last build when it was made with ``settings`` and describes ``tables``
    (each table file's identity now); otherwise an empty state (the build starts from nothing)."""
    try:
        with path.open("rb") as handle:
            version, state = pickle.load(handle)
    except Exception:  # missing, torn or from other code: a cache, rebuilt by this build
        return GraphState(settings=dict(settings))
    if (
        version != STATE_VERSION
        or not isinstance(state, GraphState)
        or state.settings != dict(settings)
        or state.tables != dict(tables)
    ):
        return GraphState(settings=dict(settings))
    return state


def file_identity(path: Path) -> list[int]:
    """Size, modification time and inode: what a rename keeps and a rewrite changes."""
    try:
        stat = path.stat()
    except FileNotFoundError:
        return []
    return [stat.st_size, stat.st_mtime_ns, stat.st_ino]


def _groups(plain: dict[GroupKey, Any]) -> dict[GroupKey, MentionGroup]:
    return {
        key: MentionGroup(Counter(s for surfaces in by_chunk.values() for s in surfaces), by_chunk, fragments)
        for key, (by_chunk, fragments) in plain.items()
    }
