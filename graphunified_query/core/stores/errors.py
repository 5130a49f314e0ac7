"""What a reader of a data home raises: the store's errors, each naming the file and the command
that (re)builds it. Shared by the query side (loading a snapshot) and the pipeline (checking what
readers would fail on), so both live in core."""

from __future__ import annotations

from graphunified_query.core.stores.parquet import StoreError


class IndexNotBuilt(StoreError):
    """The data home has no (complete) index; the message names the command that builds it."""


class StoreDamaged(IndexNotBuilt):
    """A stored file is truncated, deleted or unreadable; the message names it and the rebuild."""
