"""The retrievers: one protocol, one result type; `registry.STRATEGIES` names them all."""

from graphunified_query.strategies.base import Retriever, RetrieverContext

__all__ = ["Retriever", "RetrieverContext"]
