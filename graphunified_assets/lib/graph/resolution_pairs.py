"""Entity resolution's candidate pairs, remembered between builds so an update compares only what changed.

The quadratic part of resolution is proposing pairs: fuzzy name comparisons inside blocks and
nearest neighbours among name embeddings. Both are functions of the names alone, so they are kept
(``PairMemory``, a file in the home's cache) and an update computes only the pairs that involve a
new or changed name; pairs of removed names are dropped without comparing anything else. The
cheap linear steps (union-find, aliases, type votes, canonical names) then run over everything as
in a full build, so the result equals a full resolution of the same mentions.

Fuzzy pairs depend only on the two names. Embedding pairs are "j among i's ``neighbours + 1``
nearest and cosine ≥ threshold", so only neighbours above the threshold matter: each name keeps
its top-k above the threshold (``close``). A new name enters an existing name's list when it
beats the list's weakest entry or the list is not full; a removed neighbour leaves it, and only
a full list (other names above the threshold may be waiting) is recomputed, one row.
"""

from __future__ import annotations

import json
import os
import pickle
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path

import numpy as np
from rapidfuzz import fuzz, process

from graphunified_assets.lib.collector import collector_paused
from graphunified_assets.lib.graph.name_matching import fuzzy_blocks, markers
from graphunified_assets.lib.vectors.neighbours import columns_above, top_columns
from graphunified_assets.lib.vectors.text_vectors import TextVectors, load_vectors, save_vectors

Embed = Callable[[list[str]], np.ndarray]
_ROWS = 1024  # similarity rows per matrix product: bounds memory at 1024 x names floats
VERSION = 2  # 1 was gzipped JSON (`resolution_pairs.json.gz`): 1.1 s of every 12.6K update, 0.3 s pickled


@dataclass
class _TypeMemory:
    fuzzy_names: set[str] = field(default_factory=set)
    fuzzy_pairs: set[tuple[str, str]] = field(default_factory=set)
    labels: dict[str, str] = field(default_factory=dict)  # norm -> the label whose vector was used
    close: dict[str, list[tuple[str, float]]] = field(default_factory=dict)  # top-k at/above threshold
    k: int = 0
    thresholds: tuple[float, float] = (0.0, 0.0)  # (fuzzy, embedding) the pairs were found with


@dataclass
class PairMemory:
    """Candidate pairs per entity type, keyed by normalized name; ``work`` counts what was computed."""

    settings: dict[str, object]
    types: dict[str, _TypeMemory] = field(default_factory=lambda: defaultdict(_TypeMemory))
    work: dict[str, int] = field(default_factory=lambda: {"fuzzy_comparisons": 0, "embedding_rows": 0})
    # Per type, the labels the last build embedded and their vectors: a new name's neighbours are
    # searched among every label (`TextVectors`; a file beside the pairs).
    vectors: dict[str, TextVectors] = field(default_factory=lambda: defaultdict(TextVectors))
    path: Path | None = None  # where it was loaded from (and is saved to)
    spilled: bool = False  # its vectors written and let go (`spill`)

    # -- fuzzy -------------------------------------------------------------------------------
    def fuzzy_pairs(self, type_: str, names: Sequence[str], *, threshold: float) -> list[tuple[int, int]]:
        memory = self._typed(type_, fuzzy=threshold)
        current = set(names)
        new = current - memory.fuzzy_names
        pairs = {(a, b) for a, b in memory.fuzzy_pairs if a in current and b in current}
        if new:
            for members in fuzzy_blocks(names).values():
                fresh = [i for i in members if names[i] in new]
                if not fresh or len(members) < 2:
                    continue
                self.work["fuzzy_comparisons"] += len(fresh) * len(members)
                scores = process.cdist(
                    [names[i] for i in fresh],
                    [names[i] for i in members],
                    scorer=fuzz.ratio,
                    score_cutoff=threshold,
                )
                for r, c in zip(*np.nonzero(scores), strict=True):
                    a, b = names[fresh[r]], names[members[c]]
                    if a != b and markers(a) == markers(b):
                        pairs.add((min(a, b), max(a, b)))
        memory.fuzzy_names, memory.fuzzy_pairs = current, pairs
        index = {name: i for i, name in enumerate(names)}
        return sorted((min(index[a], index[b]), max(index[a], index[b])) for a, b in pairs)

    # -- embedding neighbours ----------------------------------------------------------------
    def embedding_pairs(
        self,
        type_: str,
        names: Sequence[str],
        labels: Sequence[str],
        embed: Embed,
        *,
        threshold: float,
        neighbours: int,
    ) -> list[tuple[int, int]]:
        """Pairs (i, j) with j among i's top ``neighbours + 1`` by cosine and at least ``threshold``."""
        memory = self._typed(type_, embedding=threshold)
        if len(names) < 2:
            memory.labels, memory.close, memory.k = dict(zip(names, labels, strict=True)), {}, 0
            return []
        k = min(neighbours + 1, len(names))
        index = {name: i for i, name in enumerate(names)}
        changed = [i for i, name in enumerate(names) if memory.labels.get(name) != labels[i]]
        relabelled = {names[i] for i in changed}
        gone = {n for n in memory.labels if n not in index or n in relabelled}
        if k != memory.k:  # few names: the neighbour count itself changed, start afresh
            changed, memory.close = list(range(len(names))), {}
        if changed or gone:
            close = {n: row for n, row in memory.close.items() if n in index and n not in gone}
            redo = set(changed)
            for name, row in close.items():
                if any(j in gone for j, _ in row):
                    if len(row) >= k:  # a full list may hide names above the threshold: recompute
                        redo.add(index[name])
                    close[name] = [(j, s) for j, s in row if j not in gone]
            fresh = sorted(redo)
            # Only recomputed rows need vectors (from the embedding cache): a removal often needs none.
            vectors = self.vectors[type_].lookup(labels, embed) if fresh else np.empty((0, 0), np.float32)
            for start in range(0, len(fresh), _ROWS):
                rows = fresh[start : start + _ROWS]
                sims = vectors[rows] @ vectors.T
                self.work["embedding_rows"] += len(rows)
                above = columns_above(sims, threshold)
                for r, i in enumerate(rows):
                    top = top_columns(sims[r], above[r], k)
                    close[names[i]] = [(names[j], float(sims[r, j])) for j in top]
                # A recomputed name may now belong in another name's list (similarity is symmetric).
                for r, i in enumerate(rows):
                    for j in above[r].tolist():
                        if j not in redo:
                            close[names[j]] = _merged(close.get(names[j], []), names[i], float(sims[r, j]), k)
            memory.close = close
        memory.labels, memory.k = dict(zip(names, labels, strict=True)), k
        self.vectors[type_].keep(labels)
        pairs: set[tuple[int, int]] = set()
        for name, row in memory.close.items():
            i = index[name]
            for j_name, _ in row:
                j = index[j_name]
                if j != i:
                    pairs.add((min(i, j), max(i, j)))
        return sorted(pairs)

    def _typed(
        self, type_: str, *, fuzzy: float | None = None, embedding: float | None = None
    ) -> _TypeMemory:
        """The type's memory; the half made with another threshold is forgotten."""
        memory = self.types[type_]
        if fuzzy is not None and memory.thresholds[0] != fuzzy:
            memory.fuzzy_names, memory.fuzzy_pairs = set(), set()
            memory.thresholds = (fuzzy, memory.thresholds[1])
        if embedding is not None and memory.thresholds[1] != embedding:
            memory.labels, memory.close, memory.k = {}, {}, 0
            memory.thresholds = (memory.thresholds[0], embedding)
        return memory

    # -- persistence -------------------------------------------------------------------------
    # Both with the collector paused: at 12.6K passages the pairs are 190K lists and tuples, none
    # in a cycle, and full collections among the graph stage's objects made the load 0.48 s, not
    # 0.11 s (1.5 s in one profiled update).
    @classmethod
    @collector_paused()
    def load(cls, path: Path, settings: dict[str, object]) -> PairMemory:
        """The remembered pairs, or an empty memory when the file is missing, damaged or was made
        with other thresholds or another embedding model (a full resolution then rebuilds it)."""
        memory = cls(settings=settings, path=path)
        # The name vectors first: they stay valid whatever became of the pairs (a version-1 file
        # after an upgrade), and without them every name's vector is read back from the embedding
        # cache, minutes of random reads on a cold disk at 12.6K passages.
        memory.vectors.update(load_vectors(_vectors_path(path), json.dumps(settings, sort_keys=True)))
        try:
            saved = pickle.loads(path.read_bytes())  # the home's own cache, as the graph state is
            if saved["version"] != VERSION or saved["settings"] != settings:
                return memory
            memory.types.update({type_: _TypeMemory(**values) for type_, values in saved["types"].items()})
        except Exception:  # missing, torn or another version's: resolution computes every pair
            pass
        return memory

    def spill(self) -> None:
        """Writes the name vectors to their file and lets them go (0.1 GB at 12.6K passages, no
        longer read once resolution is done); `save` then leaves that file as it is."""
        if self.path is not None and self.vectors:
            save_vectors(_vectors_path(self.path), json.dumps(self.settings, sort_keys=True), self.vectors)
            self.vectors, self.spilled = defaultdict(TextVectors), True

    @collector_paused()
    def save(self, path: Path) -> None:
        # Pickled, not gzipped JSON: 0.3 s to write and read back at 12.6K passages against 1.5 s.
        data = {
            "version": VERSION,
            "settings": self.settings,
            "types": {
                type_: {f.name: getattr(m, f.name) for f in fields(m)} for type_, m in self.types.items()
            },
        }
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(path.name + ".partial")
        partial.write_bytes(pickle.dumps(data, protocol=pickle.HIGHEST_PROTOCOL))
        if not (self.spilled and path == self.path):
            save_vectors(_vectors_path(path), json.dumps(self.settings, sort_keys=True), self.vectors)
        os.replace(partial, path)  # atomic: a crash leaves the previous memory, still valid


def _vectors_path(path: Path) -> Path:
    return path.with_name(path.name.split(".")[0] + ".vectors")  # a folder (`text_vectors`)


def _merged(row: list[tuple[str, float]], name: str, sim: float, k: int) -> list[tuple[str, float]]:
    entries = [e for e in row if e[0] != name] + [(name, sim)]
    return sorted(entries, key=lambda e: -e[1])[:k]
