"""A context's other sources: the copies of its document (`core/aliases.py` reads the map)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from types import MappingProxyType

from graphunified_query.strategies.results import RetrievalResult


def with_aliases(
    results: Sequence[RetrievalResult], aliases: Mapping[str, tuple[str, ...]]
) -> tuple[RetrievalResult, ...]:
    """``results`` with every copy of their document named in the source and the metadata."""
    if not aliases:
        return tuple(results)
    named = []
    for result in results:
        also = aliases.get(result.document_id or "")
        if not also:
            named.append(result)
            continue
        source = result.source
        if result.document_id and source.startswith(result.document_id):
            rest = source[len(result.document_id) :]
            source = f"{result.document_id} (also: {', '.join(also)}){rest}"
        metadata = MappingProxyType({**result.metadata, "also_sources": list(also)})
        named.append(dataclasses.replace(result, source=source, metadata=metadata))
    return tuple(named)
