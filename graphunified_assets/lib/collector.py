"""Pausing Python's cycle collector while a step builds millions of small objects.

The collector runs each time allocations outnumber frees by 700, and walks every surviving
object whenever their number grew by a quarter. The graph stage makes millions of tuples, lists
and dicts, none of them part of a cycle: on a 12.6K-passage home, an update's `graph_elements`
ran 9,800 collections that took 13 of its 42 s (20 s of collections in the whole 104-s update).
Reference counting frees what such a step drops; the pause only defers cycles, which one
collection finds when it ends.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_paused() -> Iterator[None]:
    """No automatic collection inside the block; the objects it made are collected once after.
    Processes forked inside it inherit the pause (`spacy_workers` ends it in its workers)."""
    if not gc.isenabled():  # nested, or paused by the caller: theirs to end
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
        gc.collect(1)  # the block's survivors are all still young: one pass over them
