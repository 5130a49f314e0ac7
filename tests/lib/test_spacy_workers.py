"""spaCy parsing over worker processes: the same docs in the same order, and no worker outlives
the process that started it."""

from __future__ import annotations

import multiprocessing
import os
import signal
import time
from collections.abc import Iterator
from multiprocessing.connection import Connection
from pathlib import Path
from typing import TypeVar

import pytest
from spacy.language import Language
from spacy.tokens import Doc

from graphunified_assets.lib.extraction.spacy_workers import read_docs
from graphunified_query.core.text.spacy_text import load_pipeline

PEOPLE = [("Marie Curie", "Warsaw"), ("Thomas Hale", "Leeds"), ("Steve Jobs", "San Francisco")]
T = TypeVar("T")
TEXTS = [f"{name} was born in {place} in {1900 + i}." for i, (name, place) in enumerate(PEOPLE * 24)]


@pytest.fixture(scope="module")
def nlp() -> Language:
    return load_pipeline()


def _parsed(i: int, doc: Doc) -> tuple[int, str, dict[str, object]]:
    return i, doc.text, doc.to_json()  # tags, dependencies, entities


def _workers_seen(results: Iterator[T]) -> tuple[int, list[T]]:
    """The worker processes alive once reading has started, and every result."""
    before = set(multiprocessing.active_children())
    first = next(results)
    workers = set(multiprocessing.active_children()) - before
    return len(workers), [first, *results]


def test_two_workers_read_each_text_as_one_process_does_in_order(nlp: Language) -> None:
    alone = list(read_docs(TEXTS, _parsed, processes=1, nlp=nlp))
    assert [(i, text) for i, text, _ in alone] == list(enumerate(TEXTS))
    workers, spread = _workers_seen(read_docs(TEXTS, _parsed, processes=2, batch_size=32, nlp=nlp))
    assert workers == 2 and spread == alone
    # Fewer texts than a batch per worker: read here, no process started for them.
    few, results = _workers_seen(read_docs(TEXTS[:40], _parsed, processes=2, batch_size=32, nlp=nlp))
    assert few == 0 and results == alone[:40]
    assert list(read_docs([], _parsed, processes=2, nlp=nlp)) == []


def test_a_reader_that_fails_in_a_worker_fails_the_call(nlp: Language) -> None:
    def failing(i: int, doc: Doc) -> int:
        if i == 50:
            raise ValueError(f"cannot read {doc.text!r}")
        return i

    with pytest.raises(ValueError, match="cannot read"):
        list(read_docs(TEXTS, failing, processes=2, batch_size=16, nlp=nlp))


def _parse_and_hang(send: Connection) -> None:
    """A step's process: starts its workers, reports their pids, then waits to be killed."""
    results = read_docs(TEXTS * 4, _parsed, processes=2, batch_size=8)
    next(results)
    send.send([p.pid for p in multiprocessing.active_children()])
    time.sleep(600)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0]
    except (FileNotFoundError, IndexError):
        return False
    return state != "Z"  # a zombie has exited: only its parent's wait is missing


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="dying with the parent is Linux's prctl")
def test_workers_die_with_a_killed_step() -> None:
    context = multiprocessing.get_context("spawn")
    receive, send = context.Pipe(duplex=False)
    step = context.Process(target=_parse_and_hang, args=(send,))
    step.start()
    assert receive.poll(120), "the step never started its workers"
    workers = receive.recv()
    assert len(workers) == 2 and all(_alive(pid) for pid in workers)
    os.kill(step.pid or 0, signal.SIGKILL)
    step.join()
    deadline = time.monotonic() + 20
    while any(_alive(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(_alive(pid) for pid in workers), "a spaCy worker outlived its killed step"
