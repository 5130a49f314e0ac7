"""The router reads a question's entities against the served index's names: an engine binds its
snapshot's name index, and train-router the home's, so the features trained on are those served."""

from __future__ import annotations

from pathlib import Path

from graphunified_query.engine.query_engine import QueryEngine
from graphunified_query.routing.command import home_router
from graphunified_query.strategies.entity_linking import name_index, name_key
from graphunified_query.strategies.mentions import NOT_BRIDGES


def _named_entity(engine: QueryEngine) -> tuple[str, str]:
    """A two-word capitalized entity of the fixture index, and its type as the name index has it."""
    types = name_index(engine.snapshot).types
    for entity in engine.snapshot.entities:
        title = str(entity["title"])
        words = title.split()
        key = name_key(title)
        if (
            len(words) == 2
            and all(w[:1].isupper() and w.isalpha() for w in words)
            and types[key] not in NOT_BRIDGES
        ):
            return title, types[key]
    raise AssertionError("the fixture index has no two-word capitalized entity")


def test_the_engine_router_types_entities_from_its_snapshot(engine: QueryEngine) -> None:
    title, type_ = _named_entity(engine)
    features = engine.router.rule.features(f"What did {title} do?")
    assert features.entities == ((title, type_),) and type_ != "UNKNOWN"
    decision = engine.ask(f"Who is {title}?", "auto", retrieve_only=True).metadata["router_features"]
    assert decision["entities"] == [title] and decision["entity_types"] == [type_]


def test_train_router_reads_the_homes_names(engine: QueryEngine, built_home: Path, tmp_path: Path) -> None:
    title, type_ = _named_entity(engine)
    question = f"What did {title} do?"
    assert home_router(built_home).features(question).entities == ((title, type_),)
    # A home with no index yet: capitals alone, no error.
    assert home_router(tmp_path).features(question).entities == ((title, "UNKNOWN"),)


def test_serve_warms_the_routers_name_index(built_home: Path) -> None:
    """`serve` warms the router in the background (`QueryService.warm_router`): the index is built
    then, not by the first routed request."""
    from graphunified_query.server.service import QueryService

    engine = QueryEngine.open(built_home, environ={})
    service = QueryService(engine)
    engine.snapshot.extras.pop("name_index", None)  # a retriever's warm-up may have built it
    service.warm_router().join(60)
    assert "name_index" in engine.snapshot.extras
