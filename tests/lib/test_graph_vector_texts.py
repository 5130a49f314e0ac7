"""The texts graph_vectors compares by, composed column by column, are the per-row texts each
vector is stored with (a difference would recompute every row on every update)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from graphunified_assets.lib.vectors.graph_vector_texts import ROW_TEXTS as _TEXTS
from graphunified_assets.lib.vectors.graph_vector_texts import column_texts as _texts
from graphunified_assets.lib.vectors.relationship_vectors import relationship_text
from graphunified_query.core.artifacts import ENTITIES, FACTS, RELATIONSHIPS

RELATIONSHIPS_ROWS = [
    {
        "source": "ADA",
        "type": "FOUNDED",
        "target": "SOCIETY",
        "description": "Ada founded it.",
        "keywords": ["a", "b"],
    },
    {"source": "ADA", "type": "RELATED", "target": "HALE", "description": "", "keywords": []},
    {"source": "X", "type": None, "target": "Y", "description": None, "keywords": None},
]
ENTITY_ROWS = [
    {"title": "ADA", "description": "A founder."},
    {"title": "HALE", "description": None},
]


@pytest.mark.parametrize("weight", [0.0, 0.25])
def test_relationship_texts_equal_the_per_row_texts(weight: float) -> None:
    table = pa.Table.from_pylist(RELATIONSHIPS_ROWS)
    expected = [relationship_text(row, keywords=weight > 0) for row in RELATIONSHIPS_ROWS]
    assert _texts(table, RELATIONSHIPS, weight).to_pylist() == expected


def test_entity_and_fact_texts_equal_the_per_row_texts() -> None:
    entities = pa.Table.from_pylist(ENTITY_ROWS)
    assert _texts(entities, ENTITIES, 0.0).to_pylist() == [_TEXTS[ENTITIES](row) for row in ENTITY_ROWS]
    facts = pa.Table.from_pylist([{"text": "Ada founded the society."}])
    assert _texts(facts, FACTS, 0.0).to_pylist() == ["Ada founded the society."]
