"""spaCy parsing, and what is read from each doc, spread over worker processes: the one part of
offline extraction (and of the offline relationship keywords) that ran on one core while the
other waited.

Each worker parses a batch of texts and applies the caller's reader to each doc (the extractor's
entities, relationships and facts; a sentence's theme phrases), so only the small results cross
back: shipping docs back as bytes cost 40-50 % more CPU than parsing in one process. Workers are
forked for each call, so they share the pipeline, the reader and its data as this process holds
them, whatever start method it runs under (`index` runs its Dagster runs in a spawned child,
where spaCy's own ``n_process`` would spawn its workers too and ship the whole pipeline to each).
A worker dies with the process that forked it, so a killed step leaves none behind. Where fork
is not available (Windows) everything runs here.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import TYPE_CHECKING, Any, TypeVar

from graphunified_assets.lib.parent_death import die_with
from graphunified_query.core.text.spacy_text import load_pipeline

if TYPE_CHECKING:  # spaCy (1 s to import) only when something is parsed
    from spacy.language import Language
    from spacy.tokens import Doc

T = TypeVar("T")
Reader = Callable[[int, "Doc"], T]  # (the text's index, its doc) -> what the caller keeps

_work: tuple[Language, Sequence[str], Reader[Any], int] | None = None  # a forked worker's call


def read_docs(
    texts: Sequence[str],
    read: Reader[T],
    *,
    processes: int = 1,
    batch_size: int = 32,
    nlp: Language | None = None,
) -> Iterator[T]:
    """``read(i, doc)`` of each text, in order, computed by ``processes`` workers. ``read``'s
    results must pickle. Fewer texts than a batch per worker are read here: starting a process
    for them costs more than it saves."""
    nlp = nlp or load_pipeline()
    forkable = "fork" in multiprocessing.get_all_start_methods()
    if processes < 2 or len(texts) < processes * batch_size or not forkable:
        return (read(i, doc) for i, doc in enumerate(nlp.pipe(texts, batch_size=batch_size)))
    return _spread(nlp, texts, read, processes, batch_size)


def _spread(
    nlp: Language, texts: Sequence[str], read: Reader[T], processes: int, batch_size: int
) -> Iterator[T]:
    global _work
    _work = (nlp, texts, read, batch_size)  # the workers forked below inherit it
    starts = range(0, len(texts), batch_size)
    fork = multiprocessing.get_context("fork")
    workers = ProcessPoolExecutor(
        processes, mp_context=fork, initializer=_start_worker, initargs=(os.getpid(),)
    )
    try:
        for results in workers.map(_read_batch, starts):
            yield from results
    finally:  # a reader that stops early leaves no batch running for nobody
        workers.shutdown(wait=True, cancel_futures=True)
        _work = None


def _start_worker(parent: int) -> None:
    die_with(parent)
    gc.enable()  # forked inside a step that paused the collector (`collector_paused`): a parse makes cycles


def _read_batch(start: int) -> list[Any]:
    """In a worker: the results of the batch of texts that begins at ``start``."""
    assert _work is not None, "a parse worker must be forked by read_docs()"
    nlp, texts, read, batch_size = _work
    batch = texts[start : start + batch_size]
    return [read(start + i, doc) for i, doc in enumerate(nlp.pipe(batch, batch_size=batch_size))]
