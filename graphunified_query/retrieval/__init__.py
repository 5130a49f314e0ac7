"""The retrievers: one protocol, one result type, a registry of the strategies."""

from graphunified_query.retrieval.base import REGISTRY, Retriever, RetrieverContext, register

__all__ = ["REGISTRY", "Retriever", "RetrieverContext", "register"]
