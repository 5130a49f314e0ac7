"""The graph stage runs with the cycle collector paused, and the pause loses no cycle."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from graphunified_assets.lib.collector import collector_frozen, collector_paused
from graphunified_assets.lib.extraction.extraction_rows import ExtractionRows
from graphunified_assets.lib.graph.graph_elements import build_graph_elements
from tests.lib.test_graph_elements_streaming import (
    GOLDEN,
    build_digests,
    embed,
    phrases,
    synthetic_extractions,
)


class _Node:
    def __init__(self) -> None:
        self.other: _Node | None = None


@pytest.fixture
def collections() -> Iterator[list[int]]:
    """The generations of the automatic collections that run while the test does."""
    seen: list[int] = []

    def count(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            seen.append(info["generation"])

    gc.callbacks.append(count)
    yield seen
    gc.callbacks.remove(count)


def test_the_graph_stage_makes_its_objects_without_a_collection(collections: list[int]) -> None:
    rows = ExtractionRows(synthetic_extractions(chunks=2_000), batch_rows=256)
    gc.collect()
    collections.clear()
    build_graph_elements(rows, summarize_above=2, embed=embed, phrases=phrases)
    assert collections == [1]  # the one pass over the survivors when the pause ends
    assert build_digests(ExtractionRows(synthetic_extractions())) == GOLDEN  # the same tables


def test_cycles_made_in_the_pause_are_collected_when_it_ends() -> None:
    with collector_paused():
        assert not gc.isenabled()
        a, b = _Node(), _Node()
        a.other, b.other = b, a
        alive = weakref.ref(a)
        del a, b
        assert alive() is not None  # a cycle: reference counting cannot free it
    assert gc.isenabled() and alive() is None


def test_a_pause_inside_a_pause_leaves_the_collector_to_the_outer_one() -> None:
    with collector_paused():
        with collector_paused():
            pass
        assert not gc.isenabled()
    assert gc.isenabled()


def test_the_collector_comes_back_when_the_block_raises() -> None:
    with pytest.raises(RuntimeError), collector_paused():
        raise RuntimeError("a failing step")
    assert gc.isenabled()


def test_what_a_command_holds_is_left_out_of_collections_until_its_outermost_block_ends(
    collections: list[int],
) -> None:
    held = [[n] for n in range(50_000)]  # the imports and definitions an `index` holds throughout
    with collector_frozen():
        frozen = gc.get_freeze_count()
        assert frozen >= len(held)
        made = [[n] for n in range(1_000)]
        with collector_frozen():  # a run inside `index`: what was made since is frozen too
            assert gc.get_freeze_count() >= frozen + len(made)
        assert gc.get_freeze_count() >= frozen + len(made)  # the outer block still holds them
        collections.clear()
        gc.collect()
    assert gc.get_freeze_count() == 0
    assert collections == [2]
    del held, made


def test_a_cycle_dropped_while_frozen_is_collected_after_the_block() -> None:
    a, b = _Node(), _Node()
    a.other, b.other = b, a
    alive = weakref.ref(a)
    with collector_frozen():
        del a, b
        gc.collect()
        assert alive() is not None  # frozen: no collection looks at it
    gc.collect()
    assert alive() is None  # not kept for the process's life
