"""Keeping Python's cycle collector off objects that cannot be garbage yet.

Pausing it while a step builds millions of small objects (`collector_paused`):

The collector runs each time allocations outnumber frees by 700, and walks every surviving
object whenever their number grew by a quarter. The graph stage makes millions of tuples, lists
and dicts, none of them part of a cycle: on a 12.6K-passage home, an update's `graph_elements`
ran 9,800 collections that took 13 of its 42 s (20 s of collections in the whole 104-s update).
Reference counting frees what such a step drops; the pause only defers cycles, which one
collection finds when it ends.

Freezing what a command holds (`collector_frozen`): an `index` process holds ~330K objects of
imports, Dagster definitions and plans for its whole life, and every full collection walked them
again. One passage added to the 12.6K home ran 16 full collections that took 2.9 s of its 31 s.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_paused(*, collect: bool = True) -> Iterator[None]:
    """No automatic collection inside the block; the objects it made are collected once after
    (``collect=False``: not, as the imports `collector_frozen` freezes next). Processes forked
    inside it inherit the pause (`spacy_workers` ends it in its workers)."""
    if not gc.isenabled():  # nested, or paused by the caller: theirs to end
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
        if collect:
            gc.collect(1)  # the block's survivors are all still young: one pass over them


_frozen_depth = 0  # collector_frozen blocks entered and not yet left


@contextmanager
def collector_frozen() -> Iterator[None]:
    """The objects alive on entry are left out of every collection until the outermost block ends
    (`gc.freeze`): the caller holds them throughout, and reference counting still frees them.
    Then they are collectable again, so a cycle among them is not kept for the process's life (a
    test process runs many blocks). An inner block freezes what was made since the outer began."""
    global _frozen_depth
    gc.freeze()
    _frozen_depth += 1
    try:
        yield
    finally:
        _frozen_depth -= 1
        if not _frozen_depth:
            gc.unfreeze()
