"""Moving a loaded engine to the generation a rebuild published since: what `serve` does between
requests, every `server.reload_check_seconds`.

The engine remembers where it was loaded from (`SnapshotSource`); asking that source for its
published generation is cheap (a pointer and one manifest), so the server can ask often and load
only when the number moved. The new engine shares the old one's settings, models and caches, and
the old one is left as it is, so requests running on it finish on it. Kept out of `engine.py`,
which is the query path.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from graphunified_query.core.layout import HomeLayout
from graphunified_query.core.stores.object_store import is_object_store_uri
from graphunified_query.snapshot.loader import load_snapshot, published_generation
from graphunified_query.snapshot.model import Snapshot

if TYPE_CHECKING:
    from graphunified_query.engine.query_engine import QueryEngine


@dataclass(frozen=True)
class SnapshotSource:
    """A home folder or object-store location, and the environment its credentials come from."""

    home: str
    environ: Mapping[str, str]

    @classmethod
    def at(cls, home: str | os.PathLike[str], environ: Mapping[str, str]) -> SnapshotSource:
        """The source `QueryEngine.open(home)` loaded from (a folder as its layout names it)."""
        return cls(str(home) if is_object_store_uri(home) else str(HomeLayout.at(home).home), environ)

    def published_generation(self) -> int:
        """The generation the home publishes now (0: an unpublished home)."""
        return published_generation(self.home, environ=self.environ)

    def newer_snapshot(self, loaded: int, skip: frozenset[int]) -> Snapshot | None:
        """The generation published since ``loaded``, or None when ``loaded`` is still the current
        one or the current one is in ``skip`` (it failed to load before)."""
        number = self.published_generation()
        if number == loaded or number in skip:
            return None
        snapshot = load_snapshot(self.home, environ=self.environ)
        return None if snapshot.generation == loaded else snapshot


def reloaded(engine: QueryEngine, *, skip: frozenset[int] = frozenset()) -> QueryEngine | None:
    """An engine like ``engine`` (same settings, models and caches) over the generation published
    since it was loaded, or None (see `QueryEngine.reloaded`)."""
    if engine.source is None:
        return None
    snapshot = engine.source.newer_snapshot(engine.snapshot.generation, skip)
    if snapshot is None:
        return None
    if snapshot.model != engine.embedder.model_name:  # re-embedded with another model or variant
        return type(engine).open(engine.source.home, environ=engine.source.environ)
    successor = type(engine)(
        snapshot,
        engine.settings,
        engine.embedder,
        generator=engine.generator,
        llm=engine.llm,
        router=engine.router.rule,  # the new home's learned model, if any, is selected afresh
        query_vectors=engine.context.query_vectors,
    )
    successor.source = engine.source
    return successor
