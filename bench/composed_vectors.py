"""Sweep: how close composed entity and report vectors come to embedding the full texts.

    python bench/composed_vectors.py --home /tmp/scale/home [--rows 400] [--out sweep.json]

Samples ``--rows`` entities, report points and reports of a built home (seeded), embeds each
full text (what graph_vectors and report_vectors embedded before) and its pieces
(`lib/composed_vectors.py`), and prints per setting the mean cosine between composed and full
vector and the rate at which a composed vector's nearest full-text vector (among the sample) is
its own; then how often an entity's name finds the entity (`name_retrieval`). Vectors come
from the home's embedding cache; missing ones are computed and not stored, so the home is read
only.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from graphunified_assets.defs.assets.report_vectors import report_text
from graphunified_assets.defs.resources import GraphUnifiedResource
from graphunified_assets.lib.vectors.composed_vectors import (
    composed_vectors,
    entity_pieces,
    point_pieces,
    report_pieces,
)
from graphunified_assets.lib.vectors.distinct_embedding import embed_rows, unit
from graphunified_assets.lib.vectors.graph_vector_texts import ROW_TEXTS as _TEXTS
from graphunified_query.core.artifacts import COMMUNITY_REPORTS, ENTITIES
from graphunified_query.core.indexes.report_points import report_points
from graphunified_query.core.providers.embedding import make_embedder
from graphunified_query.core.providers.embedding_cache import EmbeddingCache, text_hash


class ReadOnlyEmbedder:
    """The home's cached vectors; the rest from the model, not written back."""

    def __init__(self, home: Path) -> None:
        resource = GraphUnifiedResource(home=str(home))
        self.provider = make_embedder(resource.settings.embedding, {})
        self.cache = EmbeddingCache(resource.layout.embedding_cache)
        self.computed = 0
        self.fresh: dict[str, np.ndarray] = {}  # computed here, kept for the next setting

    def embed(self, texts: list[str]) -> np.ndarray:
        found = self.cache.get_many(self.provider.model_name, "document", [text_hash(t) for t in texts])
        missing = [t for t in dict.fromkeys(texts) if text_hash(t) not in found and t not in self.fresh]
        self.computed += len(missing)
        if missing:
            self.fresh.update(zip(missing, self.provider.embed(missing), strict=True))
        return np.stack([found.get(text_hash(t), self.fresh.get(t)) for t in texts]).astype(np.float32)


def _figures(full: np.ndarray, composed: np.ndarray) -> dict[str, float]:
    full, composed = unit(full), unit(composed)
    cosine = float(np.mean(np.sum(full * composed, axis=1)))
    own = float(np.mean((composed @ full.T).argmax(axis=1) == np.arange(len(full))))
    return {"mean_cosine": round(cosine, 3), "nearest_own": round(own, 3)}


def sweep(home: Path, rows: int, seed: int = 0) -> dict[str, object]:
    embedder = ReadOnlyEmbedder(home)
    rng = random.Random(seed)
    resource = GraphUnifiedResource(home=str(home))
    entities = rng.sample(pq.read_table(resource.layout.table_path(ENTITIES)).to_pylist(), rows)
    reports = pq.read_table(resource.layout.table_path(COMMUNITY_REPORTS)).to_pylist()
    sample = rng.sample(reports, rows)
    points = [(p, t) for r in reports for p, t in zip(point_pieces(r), report_points(r), strict=True)]
    points = rng.sample(points, rows)
    full_entities = embed_rows([_TEXTS[ENTITIES](e) for e in entities], embedder.embed)
    full_points = embed_rows([t for _, t in points], embedder.embed)
    full_reports = embed_rows([report_text(r) for r in sample], embedder.embed)
    out: dict[str, object] = {"rows": rows, "seed": seed}
    for exponent in (0.0, 0.5, 1.0):
        for name_weight in (0.5, 1.0, 2.0, 4.0):
            pieces = [entity_pieces(e, name_weight=name_weight) for e in entities]
            out[f"entities exponent={exponent} name_weight={name_weight}"] = _figures(
                full_entities, composed_vectors(pieces, embedder.embed, exponent=exponent)
            )
        out[f"points exponent={exponent}"] = _figures(
            full_points, composed_vectors([p for p, _ in points], embedder.embed, exponent=exponent)
        )
        out[f"reports exponent={exponent}"] = _figures(
            full_reports,
            composed_vectors([report_pieces(r) for r in sample], embedder.embed, exponent=exponent),
        )
    out["texts_computed"] = embedder.computed  # distinct texts not in the home's cache
    return out


def name_retrieval(home: Path, entities: int = 4000, probes: int = 400, seed: int = 0) -> dict[str, object]:
    """How often an entity's own name, as a query, ranks it in the top 5 of ``entities`` sampled:
    with the full texts, and composed per exponent and name weight. A question names the
    entities local search seeds from, so composed vectors should keep the full text's rate;
    names stand in for questions, so no evaluation question chooses the setting."""
    embedder = ReadOnlyEmbedder(home)
    rng = random.Random(seed)
    resource = GraphUnifiedResource(home=str(home))
    rows = rng.sample(pq.read_table(resource.layout.table_path(ENTITIES)).to_pylist(), entities)
    probe = rng.sample(range(entities), probes)
    query = unit(embed_rows([rows[i]["title"] for i in probe], embedder.embed))

    def rate(matrix: np.ndarray) -> float:
        top = np.argsort(-(query @ matrix.T), axis=1)[:, :5]
        return round(float(np.mean([p in t for p, t in zip(probe, top, strict=True)])), 3)

    out: dict[str, object] = {
        "name_top5 full text": rate(unit(embed_rows([_TEXTS[ENTITIES](e) for e in rows], embedder.embed)))
    }
    for exponent in (0.5, 1.0):
        for name_weight in (1.0, 2.0, 4.0, 8.0):
            pieces = [entity_pieces(e, name_weight=name_weight) for e in rows]
            composed = composed_vectors(pieces, embedder.embed, exponent=exponent)
            out[f"name_top5 exponent={exponent} name_weight={name_weight}"] = rate(composed)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--home", type=Path, required=True)
    parser.add_argument("--rows", type=int, default=400)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    result = sweep(args.home, args.rows) | name_retrieval(args.home)
    text = json.dumps(result, indent=1)
    if args.out:
        args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
