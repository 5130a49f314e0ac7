"""A home built with one MiniLM variant, after the configured variant changes (a new default, or
`embedding.models[].variant` set): `ask` keeps answering with the vectors' own variant, and the next
`index` re-embeds everything the model decides, so every vector table ends under the new one,
while the graph's name decisions (resolution, synonym edges) stay the threshold-calibrated variant's.

Before, `index --refresh` re-ran the global stage but left every chunk vector (per document, its
content unchanged) and every synonym edge (only new names were compared) the old model's."""

from __future__ import annotations

from pathlib import Path

import lancedb
import pyarrow.parquet as pq
import pytest

from graphunified_assets.cli.main import main
from graphunified_query.core.artifacts import CHUNK_VECTORS, REPORT_POINT_VECTORS, SYNONYMS
from graphunified_query.core.layout import HomeLayout
from graphunified_query.engine.query_engine import QueryEngine

SHIPPED, OPTIMIZED = "all-MiniLM-L6-v2", "all-MiniLM-L6-v2+opt-int8pc"
VECTOR_TABLES = (
    CHUNK_VECTORS,
    "entity_vectors",
    "relationship_vectors",
    "fact_vectors",
    "report_vectors",
    REPORT_POINT_VECTORS,
)


def _variant(home: Path, variant: str) -> None:
    (home / "settings.yaml").write_text(
        f"embedding:\n  models:\n    - name: all-MiniLM-L6-v2\n      variant: {variant}\n", encoding="utf-8"
    )


def _models(home: Path) -> set[str]:
    """Every model a vector of the home was made with."""
    layout = HomeLayout.at(home)
    db = lancedb.connect(str(layout.lancedb))
    found = {m for name in VECTOR_TABLES for m in db.open_table(name).to_arrow().column("model").to_pylist()}
    chunk_files = layout.partition_dir("chunk_embeddings").glob("*.parquet")
    for path in chunk_files:
        found |= set(pq.read_table(path, columns=["model"]).column(0).to_pylist())
    return found


def _synonyms(home: Path) -> tuple[str, list[dict[str, object]]]:
    """The model the synonym edges' names were embedded with, and the edges."""
    layout = HomeLayout.at(home)
    covered = pq.read_schema(layout.table_path(f"{SYNONYMS}_covered")).metadata or {}
    return covered[b"model"].decode(), pq.read_table(layout.table_path(SYNONYMS)).to_pylist()


def test_a_home_built_with_another_variant_answers_and_the_next_index_re_embeds_it(
    input_dir: Path, home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _variant(home, "shipped")
    assert main(["index", "--input", str(input_dir), "--home", str(home)]) == 0
    assert _models(home) == {SHIPPED}
    names_model, synonyms = _synonyms(home)
    assert names_model == SHIPPED
    question = "Who founded the Hale Mill?"
    shipped = QueryEngine.open(home, environ={}).ask(question, "naive", retrieve_only=True)

    _variant(home, "optimized")
    engine = QueryEngine.open(home, environ={})  # the vectors' own variant, not a refusal
    assert engine.embedder.model_name == SHIPPED
    again = engine.ask(question, "naive", retrieve_only=True)
    assert [c.chunk_id for c in again.contexts] == [c.chunk_id for c in shipped.contexts]
    capsys.readouterr()
    assert main(["status", "--home", str(home)]) == 0
    assert "3 to re-embed (embedding model changed)" in capsys.readouterr().out

    assert main(["index", "--home", str(home)]) == 0
    assert _models(home) == {OPTIMIZED}
    # Names are still compared with the variant the thresholds were set on: the same edges.
    assert _synonyms(home) == (SHIPPED, synonyms)
    reloaded = engine.reloaded()  # a server's engine follows the home to the new variant
    assert reloaded is not None and reloaded.embedder.model_name == OPTIMIZED
    assert reloaded.ask(question, "naive", retrieve_only=True).contexts
    capsys.readouterr()
    assert main(["status", "--home", str(home)]) == 0
    assert "3 unchanged; nothing to refresh" in capsys.readouterr().out
