"""The retrievers: one protocol, one result type; `registry.STRATEGIES` names them all.

The exports load on first use: the CLI's parser imports `strategies.catalog` without them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from graphunified_query.core.lazy import lazy_exports as _lazy_exports

if TYPE_CHECKING:
    from graphunified_query.strategies.base import Retriever, RetrieverContext

_EXPORTS = {
    "Retriever": "graphunified_query.strategies.base",
    "RetrieverContext": "graphunified_query.strategies.base",
}
__all__ = ["Retriever", "RetrieverContext"]
__getattr__, __dir__ = _lazy_exports(globals(), _EXPORTS)
